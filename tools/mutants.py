"""Mutation check of the conformance suite: a deliberately broken reference must fail it.

Each mutant is a copy of the ``nnx_reference`` package under its own module name
(``nnx_mutant_<name>``) with one small, exact source patch: a snippet of the current
source that must occur exactly once, and its replacement. The suite then runs against
the copy on a targeted subset with ``-x``; a mutant is *caught* when a test fails and
*survives* when the subset passes. An unmutated copy runs first on the same subsets
(the baseline): if it fails, the subsets are not a fair test and nothing is reported.

    python -m tools.mutants [--list] [--only NAME] [--no-baseline]

Exit status: 1 when a mutant survives, else 2 when the check itself could not run (a
patch no longer applies, the baseline fails, a copy does not import, pytest errors),
else 0: every mutant was caught.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nnx_conformance.expectations import DEFAULT_FILES
from nnx_conformance.impl import IMPORT_FAILURE  # in the suite's output: a broken copy, not a caught bug

REPO = Path(__file__).resolve().parents[1]
SOURCE_NAME = "nnx_reference"
SOURCE_PACKAGE = REPO / "reference" / "src" / SOURCE_NAME
SPEC_DIR = REPO / "docs_extracted"
EXPECTATIONS = REPO / "conformance" / "expectations" / DEFAULT_FILES[SOURCE_NAME]
"""The reference's expectations file: a mutant runs under the reference's known failures."""
MUTANT_PREFIX = "nnx_mutant_"
BASELINE = "unmutated"

_SELF_IMPORT = re.compile(rf"^(\s*(?:from|import)\s+){SOURCE_NAME}\b", re.MULTILINE)
SUITE_PREFIX = "conformance/src/nnx_conformance/spec/"
_FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
_ERROR_LINE = re.compile(r"^[E |]*?((?!ExceptionGroup)(?:[\w.]+(?:Error|Exception)|Failed): .*)$", re.MULTILINE)


class PatchError(RuntimeError):
    """A mutant's patch does not apply to the current reference source."""


@dataclass(frozen=True)
class Patch:
    """Replace ``old`` (which must occur exactly once in ``file``) with ``new``."""

    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Mutant:
    """One deliberate bug: its patches and the ``-k`` subset of the suite that should catch it."""

    name: str
    bug: str
    patches: tuple[Patch, ...]
    select: str

    @property
    def module(self) -> str:
        return MUTANT_PREFIX + self.name


def area_tests(area: str, *modules: str) -> str:
    """The ``-k`` expression of the hand-written tests of ``spec/<area>/`` in ``modules``
    (default: its laws, errors and parity modules); others whose names say ``area`` come too."""
    return f"{area} and ({' or '.join(modules or ('test_laws', 'test_errors', 'test_parity'))})"


GRAPH_TESTS = area_tests("graph", "test_laws", "test_errors", "test_parity", "test_mode_flags")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "split_drops_variable",
        "nnx.split leaves the last Variable out of the state",
        (
            Patch(
                "graphlib/_split_merge.py",
                '    gdef, flat = flatten_for(node, graph, "split")\n',
                '    gdef, flat = flatten_for(node, graph, "split")\n    flat = flat[:-1]\n',
            ),
        ),
        f"{GRAPH_TESTS} or {area_tests('state')}",
    ),
    Mutant(
        "merge_loses_sharing",
        "nnx.merge in graph mode rebuilds a shared Variable as a second copy",
        (
            Patch(
                "graphlib/_unflatten.py",
                "    if isinstance(d, (VariableRef, NodeRef)):\n        return ctx.index_ref[d.index]\n",
                "    if isinstance(d, VariableRef):\n        return ctx.index_ref[d.index].copy()\n"
                "    if isinstance(d, NodeRef):\n        return ctx.index_ref[d.index]\n",
            ),
        ),
        GRAPH_TESTS,
    ),
    Mutant(
        "not_does_not_negate",
        "nnx.Not(f) matches what f matches",
        (
            Patch(
                "filterlib.py",
                "        return not self.predicate(path, x)\n",
                "        return self.predicate(path, x)\n",
            ),
        ),
        area_tests("filterlib"),
    ),
    Mutant(
        "rngs_count_does_not_advance",
        "an Rngs stream hands out the same key on every call",
        (Patch("rnglib.py", "        self.count.set_value(count + 1)\n", "        self.count.set_value(count)\n"),),
        area_tests("rnglib"),
    ),
    Mutant(
        "update_ignores_last_path",
        "nnx.update writes every leaf of the state but the last",
        (
            Patch(
                "graphlib/_state_ops.py",
                "    for path, leaf in collect_leaves((state, *states)):\n",
                "    for path, leaf in collect_leaves((state, *states))[:-1]:\n",
            ),
        ),
        GRAPH_TESTS,
    ),
    Mutant(
        "clone_shares_variables",
        "nnx.clone returns a graph that shares its Variables with the original",
        (
            Patch(
                "graphlib/_state_ops.py",
                "            leaf = leaf.copy()  # keeps the Variable's type, metadata and hooks\n",
                "            pass\n",
            ),
        ),
        GRAPH_TESTS,
    ),
    Mutant(
        "oftype_ignores_subclasses",
        "nnx.OfType(T) matches instances of T itself but not of its subclasses",
        (Patch("filterlib.py", "        return isinstance(x, self.type)\n", "        return type(x) is self.type\n"),),
        area_tests("filterlib"),
    ),
    Mutant(
        "transforms_drop_updates",
        "Variable updates made inside nnx.jit, nnx.grad, nnx.vmap, ... never reach the caller",
        (
            Patch(
                "transforms/_lift.py",
                "    if not write:\n        lifted = lifted.unwritten()\n",
                "    lifted = lifted.unwritten()\n",
            ),
        ),
        f"{area_tests('transforms', 'test_laws', 'test_edges', 'test_trace_counts')} or guide:transforms",
    ),
    Mutant(
        "hijax_updates_under_transforms",
        "a non-ref hijax Variable takes writes inside JAX transformations, which never reach the caller",
        (
            Patch(
                "variablelib.py",
                '        if self._var_metadata.get("hijax") and inside_transformation():\n',
                "        if False:\n",
            ),
        ),
        "hijax",
    ),
    Mutant(
        "refs_left_in_transform_outputs",
        "nnx.jit, nnx.cond and nnx.remat return the input Refs of ref=True Variables, which JAX refuses",
        (
            Patch(
                "transforms/_refs.py",
                "    if not any(map(is_ref, leaves)):\n        return tree, False\n",
                "    if True:\n        return tree, False\n",
            ),
        ),
        "ref_variable",
    ),
)


@dataclass(frozen=True)
class Outcome:
    """The suite's verdict on one package: pytest's exit code, its first failing test, the time."""

    name: str
    returncode: int
    seconds: float
    output: str

    @property
    def verdict(self) -> str:
        """``caught`` (a test failed), ``survived`` (all passed) or ``error`` (pytest or the import failed)."""
        if IMPORT_FAILURE in self.output:
            return "error"
        if self.name == BASELINE:
            return {0: "passed", 1: "failed"}.get(self.returncode, "error")
        return {0: "survived", 1: "caught"}.get(self.returncode, "error")

    @property
    def first_failure(self) -> str | None:
        """The first failing test's id, relative to the suite's ``spec`` package."""
        match = _FAILED_LINE.search(self.output)
        return match.group(1).removeprefix(SUITE_PREFIX) if match else None

    @property
    def reason(self) -> str | None:
        """The first exception line of pytest's failure report: what the failing test says went wrong."""
        match = _ERROR_LINE.search(self.output)
        return match.group(1).strip() if match else None


def copy_package(source: Path, dest_root: Path, module: str) -> Path:
    """Copy the package at ``source`` to ``dest_root/module``, rewriting its absolute self-imports."""
    dest = dest_root / module
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in dest.rglob("*.py"):
        text = path.read_text()
        rewritten = _SELF_IMPORT.sub(rf"\g<1>{module}", text)
        if rewritten != text:
            path.write_text(rewritten)
    return dest


def apply_patch(package: Path, patch: Patch, mutant: str) -> None:
    """Apply ``patch`` inside ``package``; raise :class:`PatchError` unless its snippet occurs once
    and the patched file still compiles."""
    path = package / patch.file
    if not path.is_file():
        raise PatchError(f"mutant {mutant!r}: no file {patch.file} in {package}")
    text = path.read_text()
    count = text.count(patch.old)
    if count != 1:
        raise PatchError(
            f"mutant {mutant!r}: the snippet occurs {count} times in {patch.file}, expected once "
            f"(the reference changed? update the mutant):\n{patch.old}"
        )
    patched = text.replace(patch.old, patch.new)
    try:
        compile(patched, str(path), "exec")
    except SyntaxError as exc:
        raise PatchError(f"mutant {mutant!r}: the patched {patch.file} does not compile: {exc}") from None
    path.write_text(patched)


def make_mutant(mutant: Mutant, dest_root: Path) -> Path:
    """The patched copy of the reference for ``mutant``, under ``dest_root``."""
    package = copy_package(SOURCE_PACKAGE, dest_root, mutant.module)
    for patch in mutant.patches:
        apply_patch(package, patch, mutant.name)
    return package


def run_suite(module: str, select: str, path_root: Path, name: str) -> Outcome:
    """Run the suite's ``select`` subset against ``module`` (found on ``path_root``); stop at a failure."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path_root), env.get("PYTHONPATH")) if p)
    env.setdefault("JAX_PLATFORMS", "cpu")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "nnx_conformance",
        "--impl",
        module,
        "--spec-dir",
        str(SPEC_DIR),
        "--expectations",
        str(EXPECTATIONS),
        "-p",
        "no:cacheprovider",
        "-q",
        "-x",
        "-rfE",
        "-k",
        select,
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return Outcome(name, done.returncode, seconds, done.stdout + done.stderr)


def baseline_select(mutants: Sequence[Mutant]) -> str:
    """The union of the mutants' subsets: what the unmutated copy must pass."""
    return " or ".join(f"({m.select})" for m in mutants)


def _row(name: str, verdict: str, test: str, seconds: str) -> str:
    return f"{name:<30} {verdict:<9} {seconds:>7}  {test}"


def _report(outcome: Outcome) -> None:
    print(_row(outcome.name, outcome.verdict, outcome.first_failure or "-", f"{outcome.seconds:.1f}s"))
    if outcome.reason:
        print(f"{'':<48}  {outcome.reason[:160]}")
    sys.stdout.flush()


def _tail(output: str, lines: int = 30) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


def check(mutants: Sequence[Mutant], baseline: bool) -> int:
    """Build and run every mutant (after the baseline); the exit status described in the module docstring."""
    with tempfile.TemporaryDirectory(prefix="nnx-mutants-") as tmp:
        root = Path(tmp)
        try:
            for mutant in mutants:
                make_mutant(mutant, root)
        except PatchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(_row("mutant", "verdict", "first failing test", "time"))
        if baseline:
            unmutated = Mutant(BASELINE, "no bug", (), baseline_select(mutants))
            copy_package(SOURCE_PACKAGE, root, unmutated.module)
            outcome = run_suite(unmutated.module, unmutated.select, root, BASELINE)
            _report(outcome)
            if outcome.verdict != "passed":
                print(
                    f"error: the unmutated copy does not pass -k {unmutated.select!r}:\n{_tail(outcome.output)}",
                    file=sys.stderr,
                )
                return 2
        outcomes = []
        for mutant in mutants:
            outcome = run_suite(mutant.module, mutant.select, root, mutant.name)
            _report(outcome)
            if outcome.verdict == "error":
                print(_tail(outcome.output), file=sys.stderr)
            outcomes.append(outcome)
    survived = [o.name for o in outcomes if o.verdict == "survived"]
    errors = [o.name for o in outcomes if o.verdict == "error"]
    caught = len(outcomes) - len(survived) - len(errors)
    print(
        f"{caught} caught, {len(survived)} survived, {len(errors)} errors"
        + (f"; survived: {', '.join(survived)}" if survived else "")
    )
    if survived:
        return 1
    return 2 if errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--only", metavar="NAME", choices=[m.name for m in MUTANTS], help="run this mutant only")
    parser.add_argument(
        "--no-baseline", dest="baseline", action="store_false", help="skip the run of the unmutated copy"
    )
    args = parser.parse_args(argv)
    if args.list:
        for mutant in MUTANTS:
            print(f"{mutant.name:<30} {mutant.bug}  [-k {mutant.select!r}]")
        return 0
    chosen = [m for m in MUTANTS if args.only in (None, m.name)]
    return check(chosen, args.baseline)


if __name__ == "__main__":
    sys.exit(main())
