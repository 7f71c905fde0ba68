"""A test that kills its process fails with the signal, and the run goes on."""

from __future__ import annotations

import pytest
from specbuilder import GuidePage, write_spec
from suiteruns import BROKEN, REPO_SPEC, importable, needs_repo_spec, run_suite


@pytest.mark.parametrize(
    ("kill", "message"),
    [
        ("os.abort()", "the implementation crashed the test process (signal 6, SIGABRT)"),
        ("os._exit(3)", "the implementation crashed the test process (exit status 3)"),
    ],
)
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
def test_an_implementation_whose_clone_aborts_is_reported_in_full(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    importable(monkeypatch, BROKEN)
    run = run_suite(
        pytester, "nnx_clone_aborts", REPO_SPEC, "-n", "2", "-k", "flax.nnx.BatchNorm or object/flax.nnx.data"
    )
    assert run.report["complete"], "the run survives the abort"
    crashed = run.test("nn/normalization/flax.nnx.BatchNorm:8")
    assert (crashed["outcome"], crashed["message"]) == (
        "failed",
        "the implementation crashed the test process (signal 6, SIGABRT)",
    ), "the example calling nnx.clone crashed"
    later = [t for t in run.report["tests"] if t["area"] == "nn/normalization" and t["outcome"] == "skipped"]
    assert later and all("which crashed the test process" in t["message"] for t in later), (
        "the page's later examples are blocked by the crash"
    )
    assert run.test("object/flax.nnx.data:1")["outcome"] == "passed", "another page runs as usual"


# The cell leaves Python almost no stack: its own failure is raised, but pytest's
# building of the failure report runs out of stack (INTERNALERROR in the worker).
_EXHAUST_STACK = """
import sys
depth, frame = 0, sys._getframe()
while frame is not None:
    depth, frame = depth + 1, frame.f_back
sys.setrecursionlimit(depth + 10)
raise ValueError("the example fails")
"""


INTERNAL_ERROR = "pytest failed on the test with an internal error: RecursionError: maximum recursion depth exceeded"


def _outcomes_after_an_internal_error(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch, workers: str, *pages: GuidePage
) -> dict[str, tuple[str, str]]:
    """Each test's (outcome, message) in a run of ``pages`` on ``workers`` xdist workers,
    asserting that the run failed and reported every test."""
    write_spec(pytester.path, *pages)
    importable(monkeypatch, pytester.path)
    run = run_suite(pytester, fake_impl, pytester.path / "docs_extracted", "-n", workers)
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED, "pytest failing on a test is a failure of that test"
    assert run.report["complete"], "the run goes on after pytest fails on a test and reports every test"
    return {t["id"]: (t["outcome"], t["message"]) for t in run.report["tests"]}


def test_an_internal_error_of_pytest_fails_its_example_and_the_run_goes_on(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = _outcomes_after_an_internal_error(
        pytester,
        fake_impl,
        monkeypatch,
        "2",
        GuidePage("guide:alone", [(_EXHAUST_STACK, None)]),
        GuidePage("guide:broken", [("x = 1", None), (_EXHAUST_STACK, None), ("x", "1")]),
        *(GuidePage(f"guide:calm{n}", [("1 + 1", "2")]) for n in range(4)),
    )
    assert outcomes == {
        "guide:broken/cell:1": ("passed", ""),
        "guide:broken/cell:2": ("failed", INTERNAL_ERROR),
        "guide:broken/cell:3": ("skipped", "blocked by guide:broken/cell:2, which crashed the test process"),
        "guide:alone/cell:1": ("failed", INTERNAL_ERROR),
        **{f"guide:calm{n}/cell:1": ("passed", "") for n in range(4)},
    }, "the example pytest failed on fails with pytest's error; the rest of its page is blocked, other pages run"


# The cell's exception cannot be formatted: reading its notes raises, as the stack running
# out does there (a RecursionError while pytest builds the failure report).
_UNFORMATTABLE = """
class Unformattable(Exception):
    @property
    def __notes__(self):
        raise RecursionError("maximum recursion depth exceeded")

raise Unformattable("the example fails")
"""


def test_in_one_process_a_report_pytest_cannot_build_fails_its_example_and_the_run_goes_on(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = _outcomes_after_an_internal_error(
        pytester,
        fake_impl,
        monkeypatch,
        "0",
        GuidePage("guide:broken", [("x = 1", None), (_UNFORMATTABLE, None), ("x", "1")]),
        GuidePage("guide:calm", [("1 + 1", "2")]),
    )
    assert outcomes == {
        "guide:broken/cell:1": ("passed", ""),
        "guide:broken/cell:2": ("failed", INTERNAL_ERROR),
        "guide:broken/cell:3": ("passed", ""),
        "guide:calm/cell:1": ("passed", ""),
    }, "the example whose report pytest could not build fails with pytest's error; the others run as usual"
