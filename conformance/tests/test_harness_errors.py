"""Run-level errors: an implementation that does not import, a spec that does not match
its manifest, a suite module that cannot be collected. Each stops the run with one message and its own exit status,
never a
verdict of non-conformance."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from specbuilder import ApiPage, GuidePage, write_spec
from suiteruns import BROKEN

import nnx_conformance
from nnx_conformance.suite import HARNESS_ERROR, IMPL_UNAVAILABLE


@pytest.fixture
def two_pages(pytester: pytest.Pytester) -> None:
    write_spec(
        pytester.path,
        ApiPage("graph", [("flax.nnx.split", ">>> 1 + 1\n2\n")]),
        GuidePage("guide:g", [("1", "1"), ("2", "2")]),
    )


def _report(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report.json").read_text())


def test_an_implementation_that_does_not_import_stops_the_run_with_one_line(
    pytester: pytest.Pytester, run_docs, two_pages
) -> None:
    pytester.syspathinsert(BROKEN)
    result = run_docs("--conformance-report", "report.json", impl="nnx_import_error")
    assert result.ret == IMPL_UNAVAILABLE, "an implementation that does not import has its own exit status"
    result.assert_outcomes()
    result.stdout.fnmatch_lines(
        [
            "error: cannot import the implementation 'nnx_import_error': "
            "ImportError: nnx_import_error cannot load its compiled core; no test of the suite runs",
        ]
    )
    assert result.stdout.str().count("Traceback (most recent call last)") == 1, "the import error is shown once"
    report = _report(pytester)
    assert report["error"]["kind"] == "implementation"
    assert report["complete"] and report["collected"] == 3
    assert report["summary"]["not_run"] == 3 and report["summary"]["failed"] == 0, "no test counts as failed"
    assert {t["message"] for t in report["tests"]} == {report["error"]["message"]}, "every test says why it did not run"


def test_a_page_that_does_not_match_the_manifest_is_a_harness_error(
    pytester: pytest.Pytester, run_docs, two_pages
) -> None:
    page = pytester.path / "docs_extracted" / "pages" / "api" / "graph.md"
    page.write_text(page.read_text().replace("2", "4"))
    result = run_docs("--conformance-report", "report.json")
    assert result.ret == HARNESS_ERROR, "a stale spec has its own exit status"
    result.assert_outcomes()
    result.stdout.fnmatch_lines(
        [
            "error: the spec pages do not match the manifest (graph/flax.nnx.split:1: the example at *graph.md:5 "
            "does not match the manifest's hash); the pages are stale: regenerate the spec: nox -s extract; no test "
            "of the suite runs",
        ]
    )
    report = _report(pytester)
    assert report["error"]["kind"] == "harness" and report["summary"]["failed"] == 0


def test_a_missing_page_is_a_harness_error(pytester: pytest.Pytester, run_docs, two_pages) -> None:
    (pytester.path / "docs_extracted" / "pages" / "guides" / "g.md").unlink()
    result = run_docs()
    assert result.ret == HARNESS_ERROR
    result.stdout.fnmatch_lines(["error: the spec pages do not match the manifest (page guide:g: * is missing)*"])


def test_a_run_without_a_spec_is_a_harness_error(pytester: pytest.Pytester, run_docs) -> None:
    result = run_docs()
    assert result.ret == HARNESS_ERROR
    result.assert_outcomes()
    result.stdout.fnmatch_lines(
        ["error: cannot read the spec in *; regenerate the spec: nox -s extract; no test of the suite runs"]
    )


def test_hand_written_tests_alone_need_no_spec(pytester: pytest.Pytester, fake_impl: str) -> None:
    result = pytester.runpytest(
        "--pyargs",
        "nnx_conformance.spec.api",
        "--impl",
        fake_impl,
        "--spec-dir",
        str(pytester.path / "absent"),
        "-p",
        "no:cacheprovider",
        "--co",
        "-q",
    )
    assert result.ret == pytest.ExitCode.OK, "the spec is checked only where doc examples are collected"


@pytest.mark.parametrize("stop", [[], ["-x"]], ids=["run on", "stop at the first failure"])
def test_a_suite_module_that_cannot_be_collected_is_a_harness_error(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch, stop: list[str]
) -> None:
    suite = pytester.path / "suite"
    shutil.copytree(
        Path(nnx_conformance.__file__).parent, suite / "nnx_conformance", ignore=shutil.ignore_patterns("__pycache__")
    )
    (suite / "nnx_conformance" / "spec" / "api" / "test_zz_broken.py").write_text("import a_module_that_is_not_there\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(suite), str(pytester.path)]))
    result = pytester.runpytest_subprocess(
        "--pyargs",
        "nnx_conformance.spec.api",
        "nnx_conformance.spec.filterlib",
        "--impl",
        fake_impl,
        "--spec-dir",
        str(pytester.path / "absent"),
        "-p",
        "no:cacheprovider",
        *stop,
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, (
        f"a module that cannot be collected is reported, not a crash of pytest:\n{output}"
    )
    assert result.ret == HARNESS_ERROR, "a suite module that cannot be collected has the harness error's exit status"
    result.stdout.fnmatch_lines(["*the suite cannot collect *test_zz_broken.py*ModuleNotFoundError*"])
