"""Reproduction scripts: one standalone Python file per failing test.

A failing doc example gets a script that replays its page, in one namespace and in
page order as the suite does, up to that example (:func:`replay_page`); the
examples it holds are the page's own code, so the script is the place to bisect a
failure. Any other failing test gets a script that reruns that test alone with the
same implementation (:func:`rerun_test`); for a hypothesis test it carries the
falsifying example as hypothesis' ``@reproduce_failure`` blob, so the rerun replays
exactly that example whatever the profile. Scripts are written by :func:`write_scripts`
into ``<report folder>/repro/``.
"""

from __future__ import annotations

import ast
import doctest
import hashlib
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from sybil import Document

from . import docpages
from .cells import Cell, run_cell
from .devices import JaxEnvironment
from .docpages import OPTIONFLAGS
from .impl import FLAX_NNX, Implementation, ImportAlias
from .items import SPEC_ROOT
from .manifest import Manifest, PageEntry
from .outputs import DocOutputChecker

FOLDER = "repro"
"""The scripts' folder, beside the JSON report."""

_BLOB = re.compile(r"@reproduce_failure\((?P<version>'[^']*'|\"[^\"]*\"), (?P<blob>b'[^']*'|b\"[^\"]*\")\)")
DOC_TESTS = "test_docs.py"
"""The module of the doc tests, under ``spec/``."""
_NOT_RUN = ("blocked by ", "excluded from the spec: ")
"""How the messages of doc examples that a page run skips begin (see ``docsuite``)."""


@dataclass(frozen=True)
class Step:
    """One example of a replayed page: a doctest (its ``>>>`` text), a code block, or a
    notebook cell with the text output it documents (None: not compared)."""

    id: str
    form: str  # "doctest", "code" or "cell"
    source: str
    output: str | None = None


class Blob(NamedTuple):
    """Hypothesis' encoding of one falsifying example, for ``@reproduce_failure``."""

    version: str
    choices: bytes


def _run_step(step: Step, namespace: dict[str, Any], checker: DocOutputChecker) -> str:
    """Run one example in the page's namespace; what went wrong, or "" when it ran as documented."""
    if step.form == "doctest":
        test = doctest.DocTestParser().get_doctest(step.source, namespace, step.id, f"<{step.id}>", 0)
        test.globs = namespace  # the page's namespace itself, not the copy a DocTest keeps
        runner = doctest.DocTestRunner(checker=checker, optionflags=OPTIONFLAGS)
        report: list[str] = []
        runner.run(test, out=report.append, clear_globs=False)
        return "".join(report)
    try:
        if step.form == "code":
            exec(compile(step.source, f"<{step.id}>", "exec", dont_inherit=True), namespace)
            return ""
        got = run_cell(step.source, namespace, f"<{step.id}>")
    except Exception as exc:  # noqa: BLE001 - whatever the page's example raises is the report
        return "".join(traceback.format_exception(exc))
    if step.output is None or checker.check_output(step.output, got, OPTIONFLAGS):
        return ""
    return checker.output_difference(doctest.Example(step.source, step.output), got, OPTIONFLAGS)


def replay_page(impl: str, page_kind: str, steps: list[Step], device: str | None = None) -> int:
    """Run ``steps`` as the suite runs a page against ``impl``; exit status 1 when the last fails."""
    JaxEnvironment().configure(device)
    implementation = Implementation.load(impl)
    if implementation.module is None:
        print(implementation.error, file=sys.stderr)
        return 2
    if implementation.name != FLAX_NNX:
        ImportAlias(implementation.module).install()
    document = Document("", f"<{steps[-1].id}>")
    docpages.seed_namespace(document, page_kind)
    checker = DocOutputChecker(impl)
    *earlier, target = steps
    for step in earlier:
        problem = _run_step(step, document.namespace, checker)
        if problem:
            print(f"{step.id}, before the failing example, fails too:\n{problem}")
    problem = _run_step(target, document.namespace, checker)
    if problem:
        print(f"{target.id} does not run as documented on {impl}:\n{problem}")
        return 1
    print(f"{target.id} ran as documented on {impl}: the failure did not reproduce")
    return 0


class ReplayBlob:
    """A pytest plugin that makes every collected hypothesis test replay one falsifying example."""

    def __init__(self, blob: Blob) -> None:
        self.blob = blob

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            test = getattr(item, "obj", None)
            if hasattr(test, "hypothesis"):
                test._hypothesis_internal_use_reproduce_failure = tuple(self.blob)  # type: ignore[union-attr]


def rerun_test(
    impl: str, test_id: str, spec_dir: str | None, blob: Blob | None = None, options: Iterable[str] = ()
) -> int:
    """Run one suite test (``test_id``: its node id under ``spec/``) alone against ``impl``,
    with no expectations; replay ``blob`` when given. Returns pytest's exit status."""
    path, _, name = test_id.partition("::")
    args = [
        f"{SPEC_ROOT / path}::{name}",
        "--impl",
        impl,
        "--expectations",
        os.devnull,
        "-p",
        "no:cacheprovider",
        "-q",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        *options,
    ]
    if spec_dir is not None:
        args += ["--spec-dir", spec_dir]
    return int(pytest.main(args, plugins=[ReplayBlob(blob)] if blob is not None else []))


def blob_of(longrepr: str) -> Blob | None:
    """The ``@reproduce_failure`` blob hypothesis printed in a failure, if it printed one."""
    found = _BLOB.search(longrepr)
    if found is None:
        return None
    return Blob(ast.literal_eval(found["version"]), ast.literal_eval(found["blob"]))


def _literal(text: str) -> str:
    """``text`` as a Python literal, a readable triple-quoted raw string where one can hold it."""
    if "'''" not in text and not text.endswith(("\\", "'")):
        return f"r'''{text}'''"
    return repr(text)


def _doctest_text(example: doctest.Example) -> str:
    """An example as doctest text: ``>>>``/``...`` source lines, then the output it documents."""
    source = example.source.rstrip("\n").split("\n")
    lines = [f">>> {source[0]}", *(f"... {line}" for line in source[1:])]
    return "\n".join(lines) + "\n" + example.want


def page_steps(page: PageEntry, index: int, impl: str, not_run: set[str]) -> list[Step]:
    """The examples of ``page`` the suite ran up to example ``index``, as steps: the
    excluded examples and those in ``not_run`` (skipped by the run) are left out."""
    _, examples = docpages.parse_page(page, impl)
    steps = []
    for entry, example in list(zip(page.examples, examples))[: index + 1]:
        if entry.id != page.examples[index].id and (entry.excluded or page.excluded or entry.id in not_run):
            continue
        parsed = example.parsed
        if isinstance(parsed, Cell):
            steps.append(Step(entry.id, "cell", parsed.source, parsed.output))
        elif isinstance(parsed, str):
            steps.append(Step(entry.id, "code", parsed))
        else:
            steps.append(Step(entry.id, "doctest", _doctest_text(parsed)))
    return steps


def _docstring(test: Mapping[str, Any], impl: str, path: Path, how: str) -> str:
    """The script's docstring: what it reproduces, how to run it, and the failure the run saw."""
    message = (test["message"] or "(no message)").replace("\\", "\\\\").replace('"""', '\\"""')
    seen = "\n".join(f"    {line}".rstrip() for line in message.splitlines()[:30])
    return (
        f'"""Reproduces {test["id"]} failing on {impl}.\n\n'
        f"Run it with the Python that ran the suite (where {impl} and nnx_conformance import):\n\n"
        f"    python {path}\n\n"
        f"{textwrap.fill(f'It {how}; it exits with status 1 while the failure remains.', 88)}\n\n"
        f"What the run saw:\n\n{seen}\n"
        '"""\n\n'
    )


@dataclass(frozen=True)
class ScriptWriter:
    """Writes the reproduction script of a failing test, for one run's implementation and spec."""

    impl: str
    manifest: Manifest | None
    spec_dir: Path | None
    device: str | None
    options: tuple[str, ...]  # options a rerun must repeat (the hypothesis profile)

    def _doc_position(self, test_id: str) -> tuple[PageEntry, int] | None:
        for page in self.manifest.pages if self.manifest is not None else ():
            for index, entry in enumerate(page.examples):
                if entry.id == test_id:
                    return page, index
        return None

    def script(self, test: Mapping[str, Any], path: Path, longrepr: str, not_run: set[str]) -> str:
        """The text of the script that reproduces ``test`` (a report entry), written at ``path``."""
        position = self._doc_position(test["id"]) if test["kind"] == "doc" else None
        if position is not None and position[0].path.is_file():
            page, index = position
            steps = page_steps(page, index, self.impl, not_run)
            body = "\n".join(
                f"    Step({s.id!r}, {s.form!r}, {_literal(s.source)}"
                + (f", {_literal(s.output)}" if s.output is not None else "")
                + "),"
                for s in steps
            )
            how = (
                f"replays the page {page.id} ({page.path}) in one namespace, as the suite does, "
                f"up to that example: the {len(steps)} examples the run ran"
            )
            return (
                _docstring(test, self.impl, path, how)
                + "from nnx_conformance.repro import Step, replay_page\n\n"
                + f"STEPS = [\n{body}\n]\n\n"
                + 'if __name__ == "__main__":\n'
                + f"    raise SystemExit(replay_page({self.impl!r}, {page.kind!r}, STEPS, device={self.device!r}))\n"
            )
        blob = blob_of(longrepr)
        how = "reruns that test alone" + (
            " on hypothesis' falsifying example (its @reproduce_failure blob)" if blob is not None else ""
        )
        test_id = f"{DOC_TESTS}::{test['nodeid'].partition('::')[2]}" if test["kind"] == "doc" else test["id"]
        return (
            _docstring(test, self.impl, path, how)
            + "from nnx_conformance.repro import Blob, rerun_test\n\n"
            + f"BLOB = {None if blob is None else f'Blob({blob.version!r}, {blob.choices!r})'}\n\n"
            + 'if __name__ == "__main__":\n'
            + f"    raise SystemExit(rerun_test({self.impl!r}, {test_id!r}, "
            + f"{str(self.spec_dir) if self.spec_dir else None!r}, BLOB, {self.options!r}))\n"
        )


def file_name(test_id: str) -> str:
    """A file name for a test id's script: the id's letters, and a hash that keeps names apart."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_id).strip("_.")[:80]
    return f"{readable}-{hashlib.sha256(test_id.encode()).hexdigest()[:8]}.py"


def write_scripts(
    report: dict[str, Any], folder: Path, writer: ScriptWriter, longreprs: Mapping[str, str]
) -> list[Path]:
    """Write one script per failed test of ``report`` into ``folder`` (its earlier scripts are
    removed) and record each as the test's ``repro`` (relative to the folder's parent)."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.py"):
        old.unlink()
    not_run = {t["id"] for t in report["tests"] if t["outcome"] == "skipped" and t["message"].startswith(_NOT_RUN)}
    written = []
    for test in report["tests"]:
        if test["outcome"] != "failed":
            continue
        path = folder / file_name(test["id"])
        path.write_text(writer.script(test, path, longreprs.get(test["nodeid"], ""), not_run), encoding="utf-8")
        test["repro"] = path.relative_to(folder.parent).as_posix()
        written.append(path)
    return written
