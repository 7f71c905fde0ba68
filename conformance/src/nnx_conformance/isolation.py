"""Tests that kill their process or never return: crash and timeout reports, page claims.

The suite runs in pytest-xdist workers that are replaced when they die. A test on
which pytest itself fails (an INTERNALERROR in its worker, such as a failure report
that runs out of stack) ends its worker too (see :class:`WorkerGuard`), so it is
reported like a crash, and the run goes on. A doc page
runs in one worker (see ``scheduling``); when that worker dies,
xdist hands the page's unfinished examples to a fresh worker, whose namespace lacks
what the page had built. :class:`PageClaims` lets the fresh worker see this: the
first worker to start a page claims it and logs each example it starts, so a second
worker finds the claim and reports the rest of the page as blocked by the crash.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

RUN_DIR_KEY = "nnx_conformance_run_dir"
"""The ``workerinput`` entry naming the folder where the workers of a run keep page claims."""

_TIMEOUT_PREFIX = "Timeout (>"  # how pytest-timeout's failure message begins


def crash_message(returncode: int | None) -> str:
    """The failure message of a test whose process died with ``returncode``."""
    if returncode is None:
        return "the implementation crashed the test process"
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else "unknown"
        return f"the implementation crashed the test process (signal {-returncode}, {name})"
    return f"the implementation crashed the test process (exit status {returncode})"


def blocked_by_crash(culprit: str) -> str:
    """The skip reason of a doc example whose page was taken down by ``culprit``."""
    return f"blocked by {culprit}, which crashed the test process"


def timeout_message(limit: float) -> str:
    return f"timed out after {limit:g} s"


def is_timeout(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether a phase failed because pytest-timeout stopped it."""
    return (
        excinfo is not None
        and isinstance(excinfo.value, pytest.fail.Exception)
        and str(excinfo.value).startswith(_TIMEOUT_PREFIX)
    )


def worker_returncode(node: Any) -> int | None:
    """The exit status of a dead xdist worker (negative: the signal), if it can be read.

    execnet keeps the worker's ``subprocess.Popen`` on its gateway's io object.
    """
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if not isinstance(popen, subprocess.Popen):
        return None
    try:
        return popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return None


def internal_error_message(reason: str) -> str:
    """The failure message of a test on which pytest failed."""
    return f"pytest failed on the test with an internal error: {reason}"


def unreported_failure(item: pytest.Item, call: pytest.CallInfo[None], error: Exception) -> pytest.TestReport:
    """The report of a test whose report pytest failed to build (formatting its exception
    raised ``error``), in a run of one process: the test fails with pytest's error, and the
    run goes on (an xdist worker ends itself instead: see :class:`WorkerGuard`)."""
    return pytest.TestReport(
        item.nodeid,
        item.location,
        dict.fromkeys(item.keywords, 1),
        "failed",
        internal_error_message(_one_line(error)),
        call.when,
        duration=call.duration,
        start=call.start,
        stop=call.stop,
        user_properties=item.user_properties,
    )


def _internal_error_file(run_dir: Path, worker_id: str) -> Path:
    return run_dir / f"internal-error-{worker_id}"


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of an exception, even one whose message cannot be formatted."""
    try:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    except Exception:  # noqa: BLE001  a message that fails again must not hide the type
        return type(exc).__name__


class WorkerGuard:
    """In an xdist worker: an error of pytest's own machinery while the tests run
    (which xdist would take for the end of the whole run) ends the worker instead.

    The worker leaves the error's line for the controller (see :func:`settle_crash`)
    and exits; xdist then reports the test it was running as crashed and starts a
    fresh worker for the rest.
    """

    def __init__(self, run_dir: Path, worker_id: str) -> None:
        self.file = _internal_error_file(run_dir, worker_id)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            return (yield)
        except (session.Interrupted, session.Failed):
            raise
        except Exception as exc:  # noqa: BLE001  whatever broke pytest, the worker must not end the run
            self.file.write_text(_one_line(exc), encoding="utf-8")
            os._exit(pytest.ExitCode.INTERNAL_ERROR)


def _internal_error_of(run_dir: Path | None, node: Any) -> str | None:
    """The error a dead worker left before it ended itself (see :class:`WorkerGuard`), taken once."""
    worker_id = getattr(getattr(node, "gateway", None), "id", None)
    if run_dir is None or worker_id is None:
        return None
    path = _internal_error_file(run_dir, worker_id)
    try:
        reason = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    path.unlink()
    return reason


def settle_crash(crashitem: str, report: pytest.TestReport, sched: Any, run_dir: Path | None) -> None:
    """Word a crashed test's report, and keep xdist from running that test again.

    A worker that ended itself on an internal error of pytest (see :class:`WorkerGuard`)
    left the error in ``run_dir``. xdist's group scheduler puts the crashed test back in
    the queue with the rest of its group; marking it done there leaves only the group's
    remaining tests, and a group left with none leaves the queue (a fresh worker given
    it would wait for tests that never come, and the run with it).
    """
    node = getattr(report, "node", None)
    reason = _internal_error_of(run_dir, node)
    report.longrepr = crash_message(worker_returncode(node)) if reason is None else internal_error_message(reason)
    queue = getattr(sched, "workqueue", {})
    for units in (queue, *getattr(sched, "assigned_work", {}).values()):
        for unit in units.values():
            if crashitem in unit:
                unit[crashitem] = True
    for scope in [scope for scope, unit in queue.items() if all(unit.values())]:
        del queue[scope]


def spare_restart(config: pytest.Config) -> None:
    """Keep a crash in a test from spending xdist's budget of crashed workers to replace.

    xdist stops replacing crashed workers after ``--max-worker-restart`` crashes (by
    default four per worker), which guards against a worker that dies while it starts;
    a test that kills its worker is the implementation's failure, and the run goes on
    however many there are. A budget given on the command line is kept as given.
    """
    dsession = config.pluginmanager.get_plugin("dsession")
    budget = getattr(dsession, "_max_worker_restart", None)
    if config.option.maxworkerrestart is None and budget is not None:
        dsession._max_worker_restart = budget + 1  # type: ignore[union-attr]


class PageClaims:
    """Which worker process started which page, and the last example each one started."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._mine: dict[str, int] = {}  # page id -> open claim file of this process

    def _path(self, page_id: str) -> Path:
        return self.folder / hashlib.sha256(page_id.encode()).hexdigest()[:32]

    def claim(self, page_id: str) -> str | None:
        """Claim a page for this process; if another process had it, the example it crashed on."""
        path = self._path(page_id)
        try:
            self._mine[page_id] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
        except FileExistsError:
            lines = path.read_text(encoding="utf-8").splitlines()
            return lines[-1] if lines else page_id
        return None

    def starting(self, page_id: str, example_id: str) -> None:
        """Log that this process starts an example of a page it claimed."""
        descriptor = self._mine.get(page_id)
        if descriptor is not None:
            os.write(descriptor, f"{example_id}\n".encode())

    def close(self) -> None:
        for descriptor in self._mine.values():
            os.close(descriptor)
        self._mine.clear()
