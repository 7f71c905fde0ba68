"""Parallel runs: the report merged from the workers, written as the run goes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from specbuilder import ApiPage, GuidePage, write_spec
from suiteruns import BROKEN, REPO_SPEC, importable, needs_repo_spec, run_suite


@pytest.fixture
def spec(pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch):
    importable(monkeypatch, pytester.path)
    return write_spec(
        pytester.path,
        ApiPage("graph", [("flax.nnx.split", ">>> x = 2\n>>> x\n2\n>>> x + 1\n4\n")]),
        GuidePage("guide:a", [("y = 1", None), ("y", "1"), ("y + 1", "2")]),
        GuidePage("guide:b", [("print('b')", "b"), ("zzz", None)]),
    )


def _comparable(report: dict) -> tuple:
    tests = sorted((t["id"], t["area"], t["kind"], t["outcome"], t["message"]) for t in report["tests"])
    return report["summary"], report["areas"], tests, report["complete"], report["collected"]


def test_a_parallel_run_reports_what_a_serial_run_does(pytester: pytest.Pytester, fake_impl: str, spec) -> None:
    serial = run_suite(pytester, fake_impl, spec)
    parallel = run_suite(pytester, fake_impl, spec, "-n", "2")
    assert parallel.result.ret == serial.result.ret == pytest.ExitCode.TESTS_FAILED
    assert _comparable(parallel.report) == _comparable(serial.report), (
        "the workers' outcomes merge into the same report"
    )
    parallel.result.stdout.fnmatch_lines(["total * 6 * 2 * 0 * 0 * 0 * 0 * 0 * 8"])


def _first_example_reported(report: Path) -> bool:
    """Whether the report being written holds the first example as passed."""
    try:
        return json.loads(report.read_text())["summary"]["passed"] == 1
    except (OSError, ValueError):  # not written yet
        return False


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_run_stopped_from_outside_leaves_a_valid_report_marked_incomplete(
    pytester: pytest.Pytester, fake_impl: str, spec, stop: signal.Signals
) -> None:
    write_spec(
        pytester.path,
        GuidePage("guide:a", [("1", "1")]),
        GuidePage("guide:slow", [("import time\ntime.sleep(600)", None)]),
    )
    report = pytester.path / "report.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "nnx_conformance.spec.test_docs",
            "--impl",
            fake_impl,
            "--spec-dir",
            str(pytester.path / "docs_extracted"),
            "--conformance-report",
            str(report),
            "-p",
            "no:cacheprovider",
        ],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600  # a loaded machine may take minutes to start JAX
        while not _first_example_reported(report):
            assert time.monotonic() < deadline, "the run reported its first example within 600 s"
            time.sleep(0.2)
        process.send_signal(stop)
        process.wait(timeout=60)
    finally:
        process.kill()
    written = json.loads(report.read_text())
    assert written["complete"] is False, "a stopped run says that it is incomplete"
    finished = [(t["id"], t["outcome"]) for t in written["tests"] if t["outcome"] != "not_run"]
    assert finished == [("guide:a/cell:1", "passed")], "the report holds what had finished"
    if stop == signal.SIGTERM:  # a run that can still write its report lists what it did not reach
        not_run = [(t["id"], t["message"]) for t in written["tests"] if t["outcome"] == "not_run"]
        assert not_run == [("guide:slow/cell:1", "the run stopped before it: it was stopped by signal 15 (SIGTERM)")], (
            "the test the signal stopped is listed as not run, with the reason"
        )


@needs_repo_spec()
def test_a_wrong_implementation_fails_with_a_reason_per_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    importable(monkeypatch, BROKEN)
    run = run_suite(
        pytester, "nnx_bias_ones", REPO_SPEC, "-n", "2", "-k", "training/optimizer/flax.nnx.optimizer.Optimizer"
    )
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert run.report["complete"] and failed, "a bias that starts at ones is caught"
    assert all("did not run as documented" in t["message"] for t in failed), "each failure says why"
