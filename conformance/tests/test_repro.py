"""Reproduction scripts: each failed test gets a standalone script that fails the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hypothesis
import pytest
from hypothesis.core import encode_failure
from specbuilder import GuidePage, write_fake_impl, write_spec

import nnx_conformance
from nnx_conformance.repro import Blob, ReplayBlob

SOURCE_ROOT = Path(nnx_conformance.__file__).parents[1]


def run_script(script: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    """Run a reproduction script as a person would, with ``paths`` importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [*paths, SOURCE_ROOT]))}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def failing_guide(pytester: pytest.Pytester) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:g",
            [
                ("x = 1", None),
                ("import orbax", None),
                ("print(orbax)", None),
                ("print(x + 1)", "3"),
                ("print('after')", "after"),
            ],
        ),
        excluded={"guide:g/cell:2": "needs orbax"},
    )


def test_a_failed_doc_example_gets_a_script_named_in_the_report_and_the_console(
    pytester: pytest.Pytester, run_docs, failing_guide
) -> None:
    result = run_docs("--conformance-report", "out/report.json")
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    repro = {test["id"]: test.get("repro") for test in report["tests"]}
    assert repro["guide:g/cell:4"] is not None and repro["guide:g/cell:4"].startswith("repro/guide_g_cell_4")
    assert {test_id for test_id, path in repro.items() if path} == {"guide:g/cell:4"}, "only failed tests get one"
    result.stdout.fnmatch_lines([f"guide:g/cell:4: *{repro['guide:g/cell:4']}"])


def test_a_doc_script_replays_the_examples_the_run_ran_and_fails_as_the_run_did(
    pytester: pytest.Pytester, run_docs, failing_guide
) -> None:
    run_docs("--conformance-report", "report.json")
    (script,) = (pytester.path / "repro").glob("*.py")
    text = script.read_text()
    assert "python " in text and "fakennx" in text, "the docstring says how to run it"
    assert "x = 1" in text and "print(x + 1)" in text
    assert "import orbax" not in text, "an excluded example is not replayed"
    assert "print(orbax)" not in text, "an example the run skipped as blocked is not replayed"
    assert "print('after')" not in text, "the replay stops at the failing example"
    ran = run_script(script, pytester.path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "guide:g/cell:4 does not run as documented on fakennx" in ran.stdout
    assert "Expected:\n    3\nGot:\n    2" in ran.stdout, "cell 4 saw cell 1's x, as in the run"


def test_scripts_of_an_earlier_run_are_replaced(pytester: pytest.Pytester, run_docs, failing_guide) -> None:
    stale = pytester.path / "repro" / "stale.py"
    stale.parent.mkdir()
    stale.write_text("raise SystemExit(1)\n")
    run_docs("--conformance-report", "report.json")
    assert not stale.exists()


BROKEN_NOT = {
    "brokennnx/__init__.py": '''
        """nnx_reference, except that Not returns the filter it is given, negating nothing."""
        import nnx_reference
        from nnx_reference import *  # noqa: F403


        def __getattr__(name):
            return getattr(nnx_reference, name)

        def Not(filter_):
            return filter_
    ''',
}


def test_a_failed_hypothesis_test_gets_a_script_that_replays_its_falsifying_example(pytester: pytest.Pytester) -> None:
    pytest.importorskip("nnx_reference", reason="the broken implementation wraps nnx_reference, absent here")
    write_fake_impl(pytester.path, BROKEN_NOT)
    pytester.syspathinsert()
    test = "nnx_conformance.spec.filterlib.test_laws"
    run = pytester.runpytest(
        "--pyargs",
        test,
        "--impl",
        "brokennnx",
        "-k",
        "de_morgan",
        "--conformance-report",
        "report.json",
        "-p",
        "no:cacheprovider",
    )
    report = json.loads((pytester.path / "report.json").read_text())
    (failed,) = [t for t in report["tests"] if t["outcome"] == "failed"]
    script = pytester.path / failed["repro"]
    text = script.read_text()
    assert "BLOB = Blob('" in text, "the script carries hypothesis' blob"
    assert "'filterlib/test_laws.py::test_de_morgan_laws_hold'" in text
    ran = run_script(script, pytester.path)
    assert ran.returncode == 1, ran.stdout + ran.stderr

    def draws(lines: list[str]) -> list[str]:  # hypothesis' "Draw N (label): value" lines, its comments left out
        shown = (line.strip().removeprefix("E").strip() for line in lines)
        return [line.split("  #")[0] for line in shown if line.startswith("Draw ")]

    drawn, in_run = draws(ran.stdout.splitlines()), set(draws(run.outlines))
    assert drawn and all(line in in_run for line in drawn), (
        f"the replayed example draws the run's falsifying example: replayed {drawn}"
    )
    assert "1 failed" in ran.stdout


def test_a_blob_makes_a_hypothesis_test_run_exactly_its_example(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_numbers="""
        from hypothesis import given, settings, strategies as st

        @settings(derandomize=True, database=None)
        @given(st.integers(0, 10**6))
        def test_small(n):
            with open("seen.txt", "a") as seen:
                seen.write(f"{n}\\n")
            assert n < 500
    """
    )
    blob = Blob(hypothesis.__version__, encode_failure([777]))
    result = pytester.runpytest("-p", "no:cacheprovider", plugins=[ReplayBlob(blob)])
    result.assert_outcomes(failed=1)
    assert set((pytester.path / "seen.txt").read_text().split()) == {"777"}
