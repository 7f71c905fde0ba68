"""Parsing generated pages with sybil: API pages as doctests and code blocks, guide pages as cells.

An API page's ``>>>`` examples are doctests; its fenced ``python`` blocks (a docstring's
plain-Python examples) are executed in the page's namespace, and pass when they raise
nothing. Doctests and guide cells use the flags flax's own doctests use: ``ELLIPSIS``, ``NUMBER`` and
(as sphinx adds it) ``NORMALIZE_WHITESPACE``. Each evaluator keeps the exception the
last example raised, so that a missing nnx name can be reported as such.
"""

from __future__ import annotations

import contextlib
import doctest
import io
from collections.abc import Iterator
from typing import Any

from sybil import Document, Example
from sybil.evaluators.doctest import NUMBER, DocTestEvaluator, DocTestRunner
from sybil.parsers.abstract import DocTestStringParser
from sybil.parsers.markdown import CodeBlockParser
from sybil.region import Region

from .cells import Cell, CellEvaluator, CellParser, ExcInfo, SourceEvaluator, cache_source, run_cell
from .manifest import PageEntry
from .outputs import DocOutputChecker

OPTIONFLAGS = doctest.ELLIPSIS | NUMBER | doctest.NORMALIZE_WHITESPACE

# What flax's documentation set-up runs before a page's examples (docs_nnx/conf.py).
GLOBAL_SETUP = "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n"


class _RecordingRunner(DocTestRunner):
    """sybil's doctest runner with the suite's output checker, remembering an example's
    unexpected exception."""

    last_exception: ExcInfo | None = None

    def __init__(self, optionflags: int, checker: DocOutputChecker) -> None:
        super().__init__(optionflags)
        self._checker = checker  # doctest's runner compares with this attribute

    def report_unexpected_exception(self, out: Any, test: Any, example: Any, exc_info: Any) -> None:
        self.last_exception = exc_info
        super().report_unexpected_exception(out, test, example, exc_info)


class ApiEvaluator(DocTestEvaluator):
    """sybil's doctest evaluator for API pages; keeps the exception an example raised."""

    def __init__(self, optionflags: int, checker: DocOutputChecker) -> None:
        self.runner = _RecordingRunner(optionflags, checker)

    @property
    def last_exception(self) -> ExcInfo | None:
        return self.runner.last_exception

    def __call__(self, example: Example) -> str:
        self.runner.last_exception = None
        return super().__call__(example)


class CodeEvaluator(SourceEvaluator):
    """Executes a code block in the page's namespace; keeps the exception it raised."""

    def filename(self, example: Example) -> str:
        return f"<{example.path}:{example.line}>"

    def execute(self, example: Example, filename: str) -> str:
        source = str(example.parsed)
        cache_source(filename, source)
        exec(compile(source, filename, "exec", dont_inherit=True), example.namespace)
        return ""


class ApiParser:
    """The sybil parser of API pages: every ``>>>`` statement and ``python`` block is one example."""

    def __init__(self, checker: DocOutputChecker) -> None:
        self.string_parser = DocTestStringParser(ApiEvaluator(OPTIONFLAGS, checker))
        self.code_parser = CodeBlockParser("python", CodeEvaluator())

    def __call__(self, document: Document) -> Iterator[Region]:
        yield from self.string_parser(document.text, document.path)
        yield from self.code_parser(document)


def parse_page(page: PageEntry, impl_name: str) -> tuple[Document, list[Example]]:
    """The page's sybil document and examples, their output compared for ``impl_name``."""
    checker = DocOutputChecker(impl_name)
    parser = CellParser(CellEvaluator(OPTIONFLAGS, checker)) if page.kind == "guide" else ApiParser(checker)
    document = Document.parse(str(page.path), parser)
    return document, list(document)


def seed_namespace(document: Document, kind: str) -> None:
    """Run flax's doctest global set-up in the page's namespace (a guide's is ``__main__``)."""
    if kind == "guide":
        document.namespace["__name__"] = "__main__"
    exec(compile(GLOBAL_SETUP, "<doctest global setup>", "exec"), document.namespace)


def source_and_output(example: Example) -> tuple[str, str]:
    """The example's source and expected output, as the manifest hashes them."""
    parsed = example.parsed
    if isinstance(parsed, Cell):
        return parsed.source, parsed.output or ""
    if isinstance(parsed, str):  # a code block: its source, no expected output
        return str(parsed), ""
    return parsed.source, parsed.want


def printed_by(example: Example) -> str:
    """Run ``example`` in its page's namespace as its evaluator does, comparing nothing: what
    it printed, a doctest's or a guide cell's shown result included. Raises what it raises."""
    parsed = example.parsed
    if isinstance(parsed, Cell):
        return run_cell(parsed.source, example.namespace, f"<{example.path}:cell {parsed.number}>")
    filename = f"<{example.path}:{example.line}>"
    source = str(parsed) if isinstance(parsed, str) else parsed.source
    cache_source(filename, source)
    mode = "exec" if isinstance(parsed, str) else "single"  # a doctest shows its expression's repr
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(source, filename, mode, dont_inherit=True), example.namespace)
    return stdout.getvalue()


def last_exception(example: Example) -> ExcInfo | None:
    """The exception the example's evaluator saw on its last run, if any."""
    return getattr(example.region.evaluator, "last_exception", None)


def failed_line(example: Example, raised: ExcInfo) -> int:
    """Where a failed example stopped: for a code block, the line that raised (that of its
    outermost frame run in the page's namespace; the statements before it ran); else 1.

    A doctest is one statement. A guide cell is blocked whole: a cell that fails part-way
    leaves a state (JAX options, defaults) the guide's later cells do not assume.
    """
    if not isinstance(example.parsed, str):
        return 1
    tb = raised[2]
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals is example.namespace and frame.f_code.co_name == "<module>":
            return tb.tb_lineno
        tb = tb.tb_next
    return 1
