"""However many tests crash or hang, the run goes on to its end, and a run that stops early
still lists every collected test, those it never reached as not run, with the reason."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from specbuilder import GuidePage, write_fake_impl, write_spec
from suiteruns import importable, run_suite

CRASHES = 200
"""Tests that crash their worker: hundreds, far more than xdist replaces by default (four per worker, eight here)."""
CPU_PER_CRASH = 4.0
"""CPU seconds a crash may cost: the start of a fresh worker, which imports pytest, hypothesis
and JAX (about 2.2 s measured). On two idle cores the run with :data:`CRASHES` crashes takes
about four minutes; on two cores shared with a dozen busy processes, about half an hour."""
CRASH_RUN_LIMIT = 2400
"""Seconds the run with :data:`CRASHES` crashes may take before the test calls it hung."""
HANGS = 30
"""Tests that never return."""
HANG_LIMIT = 2
"""The time limit of a test in the run with hangs, in seconds."""
HANG_RUN_LIMIT = 240
"""Seconds the run with :data:`HANGS` hangs of :data:`HANG_LIMIT` seconds each may take on two workers."""
T = TypeVar("T")


def _cpu_seconds(run: Callable[[], T]) -> tuple[T, float]:
    """What ``run`` returns, and the CPU time its subprocesses (and theirs) took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


ABORTED = "the implementation crashed the test process (signal 6, SIGABRT)"

BROKEN_IMPL = {
    "brokennx/__init__.py": '''
        """A fake implementation whose clone aborts the process and whose split never returns."""
        import os
        import time

        import jax  # as an implementation does: JAX starts with it, before any test
        def clone(node):
            os.abort()

        def split(node):
            while True:
                time.sleep(1)
    ''',
}


@pytest.fixture
def broken_impl(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    write_fake_impl(pytester.path, BROKEN_IMPL)
    importable(monkeypatch, pytester.path)
    return "brokennx"


def _pages(calls: int, call: str) -> list[GuidePage]:
    """``calls`` pages whose one example calls ``call`` of the implementation, and a calm page."""
    return [
        *(GuidePage(f"guide:call{n}", [(f"from flax import nnx\nnnx.{call}(1)", None)]) for n in range(calls)),
        GuidePage("guide:calm", [("x = 1", None), ("x + 1", "2")]),
    ]


LATER_CRASH = GuidePage("guide:later", [("from flax import nnx\nnnx.clone(1)", None), ("3", "3")])


def test_hundreds_of_crashes_each_fail_their_test_and_the_run_reaches_its_end(
    pytester: pytest.Pytester, broken_impl: str
) -> None:
    spec = write_spec(pytester.path, *_pages(CRASHES, "clone"), LATER_CRASH)
    run, cpu = _cpu_seconds(lambda: run_suite(pytester, broken_impl, spec, "-n", "2", limit=CRASH_RUN_LIMIT))
    assert run.report["complete"], "the run goes on to its end however many tests crash"
    assert run.report["partial"] == [], "every test ran"
    outcomes = {t["id"]: (t["outcome"], t["message"]) for t in run.report["tests"]}
    assert outcomes == {
        **{f"guide:call{n}/cell:1": ("failed", ABORTED) for n in range(CRASHES)},
        "guide:calm/cell:1": ("passed", ""),
        "guide:calm/cell:2": ("passed", ""),
        "guide:later/cell:1": ("failed", ABORTED),
        "guide:later/cell:2": ("skipped", "blocked by guide:later/cell:1, which crashed the test process"),
    }, "each crash fails its test with the signal; the tests after them run"
    assert cpu < CRASHES * CPU_PER_CRASH, (
        f"{CRASHES} crashes take {cpu:.0f} s of CPU time, at most {CPU_PER_CRASH:g} s each"
    )


def test_dozens_of_hangs_each_time_out_and_the_run_reaches_its_end(pytester: pytest.Pytester, broken_impl: str) -> None:
    spec = write_spec(pytester.path, *_pages(HANGS, "split"))
    started = time.monotonic()
    run = run_suite(pytester, broken_impl, spec, "-n", "2", "--conformance-timeout", str(HANG_LIMIT))
    took = time.monotonic() - started
    assert run.report["complete"], "the run goes on to its end however many tests hang"
    hung = {t["id"]: (t["outcome"], t["message"]) for t in run.report["tests"] if t["id"].startswith("guide:call")}
    assert hung == {f"guide:call{n}/cell:1": ("failed", f"timed out after {HANG_LIMIT} s") for n in range(HANGS)}, (
        "each hung test fails naming the limit"
    )
    assert run.test("guide:calm/cell:2")["outcome"] == "passed", "the tests after them run"
    assert took < HANG_RUN_LIMIT, f"{HANGS} hangs take {took:.0f} s, at most {HANG_RUN_LIMIT} s"


def test_a_run_that_stops_early_lists_the_tests_it_never_reached_as_not_run(
    pytester: pytest.Pytester, broken_impl: str
) -> None:
    spec = write_spec(pytester.path, *_pages(6, "clone"))
    run = run_suite(pytester, broken_impl, spec, "-n", "2", "--max-worker-restart", "1")
    stop = "the run stopped before it: maximum crashed workers reached: 1"
    assert not run.report["complete"], "a run that stopped early is incomplete"
    assert len(run.report["tests"]) == run.report["collected"] == 8, "every collected test is in the report"
    not_run = [t for t in run.report["tests"] if t["outcome"] == "not_run"]
    assert not_run and all(t["message"] == stop for t in not_run), "each test never reached says why"
    assert run.report["partial"] == [f"{len(not_run)} of 8 tests did not run: {stop}"], (
        "the report says the run is partial"
    )
    markdown = (pytester.path / "report.md").read_text().splitlines()
    assert f"Incomplete run: {8 - len(not_run)} of 8 tests finished." in markdown, "the Markdown says how many finished"
    assert f"Partial run: {len(not_run)} of 8 tests did not run: {stop}." in markdown, (
        "and how many did not run, and why"
    )
    assert run.result.outlines[-1] == f"partial run: {len(not_run)} of 8 tests did not run: {stop}", (
        "the console's last line says that the run is partial, and why"
    )


def test_a_run_stopped_at_its_first_failure_lists_the_tests_after_it_as_not_run(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(
        pytester.path, GuidePage("guide:wrong", [("1", "2")]), GuidePage("guide:after", [("1", "1"), ("2", "2")])
    )
    importable(monkeypatch, pytester.path)
    run = run_suite(pytester, fake_impl, spec, "-x")
    stop = "the run stopped before it: stopping after 1 failures"
    outcomes = {t["id"]: (t["outcome"], t["message"]) for t in run.report["tests"]}
    assert outcomes == {
        "guide:wrong/cell:1": ("failed", outcomes["guide:wrong/cell:1"][1]),
        "guide:after/cell:1": ("not_run", stop),
        "guide:after/cell:2": ("not_run", stop),
    }, "the tests after the first failure are listed as not run, with the reason"
    assert not run.report["complete"], "a run stopped at its first failure is incomplete"
    assert run.result.outlines[-1] == f"partial run: 2 of 3 tests did not run: {stop}", (
        "the console's last line says that the run is partial, and why"
    )
