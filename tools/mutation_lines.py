"""Which tests run each line of the reference: the map that picks the tests judging a mutant.

The unmutated copy's whole-suite run is recorded by coverage.py (through pytest-cov,
one context per test). A mutant inside a function body is judged by the tests that ran
its line, and by nothing else: no other test can execute it. A line that also ran
outside every test (at import, while collecting) is not mapped: its mutants are judged
as before, by their focused tests and then the whole suite. So are mutants of lines
outside function bodies (definitions, defaults, decorators, class attributes), whose
effect reaches every later call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import coverage

PHASES = ("|setup", "|run", "|teardown")
"""The suffixes pytest-cov gives a test's node id in its coverage contexts."""


def record_options(package: str) -> list[str]:
    """pytest options that record, per test, the lines of ``package`` it runs (COVERAGE_FILE says where)."""
    return [f"--cov={package}", "--cov-context=test", "--cov-report="]


@dataclass(frozen=True)
class StatementLine:
    """Where a source line stands: the lines of its innermost statement's own text (a compound
    statement's header, without its body), and whether that statement lies in a function's body."""

    first: int
    last: int
    in_body: bool


@dataclass(frozen=True)
class LineMap:
    """Per module file (relative to the package) and statement line, the node ids of the tests
    that ran it; lines that also ran outside a test are left out."""

    tests: dict[str, dict[int, frozenset[str]]] = field(default_factory=dict)
    outside: dict[str, frozenset[int]] = field(default_factory=dict)
    """Per file, the lines that ran outside any test (imports, collection, session start)."""

    @classmethod
    def read(cls, data_file: Path, package_root: Path) -> LineMap:
        """The map of a coverage data file whose measured files lie under ``package_root``."""
        data = coverage.CoverageData(str(data_file))
        data.read()
        tests: dict[str, dict[int, frozenset[str]]] = {}
        outside: dict[str, frozenset[int]] = {}
        for measured in data.measured_files():
            path = Path(measured)
            if not path.is_relative_to(package_root):
                continue
            name = str(path.relative_to(package_root))
            lines, untested = {}, set()
            for line, contexts in data.contexts_by_lineno(measured).items():
                ids = frozenset(_node_id(c) for c in contexts if c)
                if "" in contexts:
                    untested.add(line)
                elif ids:
                    lines[line] = ids
            tests[name], outside[name] = lines, frozenset(untested)
        return cls(tests, outside)

    def covering(self, module_file: str, first: int, last: int) -> frozenset[str] | None:
        """The tests that ran any of the lines ``first`` to ``last`` of ``module_file`` (coverage
        records a statement written over several lines at the lines it evaluates, not always the
        first): None when one of them also ran outside any test."""
        span = range(first, last + 1)
        if not self.outside.get(module_file, frozenset()).isdisjoint(span):
            return None
        tests = self.tests.get(module_file, {})
        return frozenset().union(*(tests.get(line, frozenset()) for line in span))


def _node_id(context: str) -> str:
    for phase in PHASES:
        if context.endswith(phase):
            return context[: -len(phase)]
    return context


def statement_line(source: str, line: int) -> StatementLine:
    """The innermost statement of ``source`` holding ``line``: the lines of its own text and
    whether it lies in a function's body. An ``except`` clause counts as a statement."""
    best: Located | None = None
    for found in _statements(ast.parse(source).body, in_body=False):
        if found.node.lineno <= line <= found.end and (best is None or found.span <= best.span):
            best = found
    if best is None:
        return StatementLine(line, line, False)
    return StatementLine(best.node.lineno, best.header_end, best.in_body)


@dataclass(frozen=True)
class Located:
    """A statement (or an ``except`` clause) and whether it is in a function's body."""

    node: ast.stmt | ast.ExceptHandler
    in_body: bool

    @property
    def end(self) -> int:
        return self.node.end_lineno or self.node.lineno

    @property
    def span(self) -> int:
        return self.end - self.node.lineno

    @property
    def header_end(self) -> int:
        """The last line of the statement's own text: before its body, if it has one."""
        body = getattr(self.node, "body", None)
        return max(self.node.lineno, body[0].lineno - 1) if body else self.end


def _statements(body: Sequence[ast.stmt | ast.ExceptHandler], in_body: bool) -> Iterator[Located]:
    """Every statement under ``body``, nested ones included, with whether it is in a function's body."""
    for statement in body:
        yield Located(statement, in_body)
        inner = in_body or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
        for name in ("body", "orelse", "finalbody", "handlers"):
            yield from _statements(getattr(statement, name, ()), inner)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body, inner)
