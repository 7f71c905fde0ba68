"""A test that kills its process fails with the signal, and the run goes on."""

from __future__ import annotations

import pytest

from specbuilder import GuidePage, write_spec
from suiteruns import BROKEN, REPO_SPEC, importable, needs_repo_spec, run_suite


@pytest.mark.parametrize(("kill", "message"), [
    ("os.abort()", "the implementation crashed the test process (signal 6, SIGABRT)"),
    ("os._exit(3)", "the implementation crashed the test process (exit status 3)"),
])
def test_a_crash_mid_page_fails_its_example_and_blocks_the_rest_of_the_page(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch, kill: str, message: str
) -> None:
    write_spec(
        pytester.path,
        GuidePage("guide:crash", [("x = 1", None), (f"import os\n{kill}", None), ("x", "1"), ("x + 1", "2")]),
        GuidePage("guide:calm", [("1 + 1", "2"), ("3", "3")]),
    )
    importable(monkeypatch, pytester.path)
    run = run_suite(pytester, fake_impl, pytester.path / "docs_extracted", "-n", "2")
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED, "a crash is a failure of the implementation"
    assert run.report["complete"], "the run goes on after a crash and reports every test"
    outcomes = {t["id"]: (t["outcome"], t["message"]) for t in run.report["tests"]}
    blocked = "blocked by guide:crash/cell:2, which crashed the test process"
    assert outcomes == {
        "guide:crash/cell:1": ("passed", ""),
        "guide:crash/cell:2": ("failed", message),
        "guide:crash/cell:3": ("skipped", blocked),
        "guide:crash/cell:4": ("skipped", blocked),
        "guide:calm/cell:1": ("passed", ""),
        "guide:calm/cell:2": ("passed", ""),
    }, "the crashing example fails with how the process ended; the rest of its page is blocked, other pages run"


@needs_repo_spec()
def test_an_implementation_whose_clone_aborts_is_reported_in_full(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    importable(monkeypatch, BROKEN)
    run = run_suite(pytester, "nnx_clone_aborts", REPO_SPEC, "-n", "2", "-k", "flax.nnx.BatchNorm or object/flax.nnx.data")
    assert run.report["complete"], "the run survives the abort"
    crashed = run.test("nn/normalization/flax.nnx.BatchNorm:8")
    assert (crashed["outcome"], crashed["message"]) == (
        "failed", "the implementation crashed the test process (signal 6, SIGABRT)"), "the example calling nnx.clone crashed"
    later = [t for t in run.report["tests"] if t["area"] == "nn/normalization" and t["outcome"] == "skipped"]
    assert later and all("which crashed the test process" in t["message"] for t in later), \
        "the page's later examples are blocked by the crash"
    assert run.test("object/flax.nnx.data:1")["outcome"] == "passed", "another page runs as usual"
