"""The state of one suite run: settings, implementation, alias, pattern files, outcomes."""

from __future__ import annotations

import platform
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import coverage, coverage_summary, devices, expectations, report
from .doc_warnings import DATA as DOC_WARNINGS
from .doc_warnings import DocWarnings
from .docsuite import SPEC_DEFECT, DocSuite, Skip, page_problems
from .graph_modes import GraphMode
from .impl import FLAX_NNX, NO_YARDSTICK, Implementation, ImportAlias, Yardstick
from .isolation import RUN_DIR_KEY, PageClaims
from .items import ItemInfo, describe, describe_nodeid, doc_case, doc_page_of, in_suite_nodeid, suite_test_id
from .manifest import REGENERATE, Manifest
from .patterns import PatternFileError, PatternList
from .report import INFO_ATTRIBUTE, RunError
from .settings import Settings, docs_requested

KEY = pytest.StashKey["Suite"]()
_REPORT_INFO = pytest.StashKey[dict[str, Any]]()

IMPL_UNAVAILABLE = 10
"""Exit status of a run whose implementation does not import (no test ran)."""
HARNESS_ERROR = 11
"""Exit status of a run stopped by a broken spec or suite: no verdict on the implementation."""

PROGRESS_INTERVAL = 1.0
"""The fewest seconds between two writes of the report while the run goes."""
PROGRESS_SHARE = 0.02
"""The most of the run's time that writing the report as it goes may take: a report of
thousands of tests takes a tenth of a second to write, and is then written every five seconds."""
PROGRESS_MAX_INTERVAL = 10.0
"""The most seconds between two writes of the report while the run goes, however slow a write."""
_SHOWN_PROBLEMS = 5


def compares_with_flax(item: pytest.Item) -> bool:
    """Whether a test compares with the real flax.nnx (it asks for the ``flax_nnx`` fixture)."""
    return "flax_nnx" in getattr(item, "fixturenames", ())


def _spec_error(manifest: Manifest | None, problem: str | None, impl_name: str) -> RunError | None:
    """The harness error of a spec that cannot be run as the manifest pins it, if any."""
    if manifest is None:
        return RunError("harness", problem or f"no spec; {REGENERATE}")
    problems = page_problems(manifest, impl_name)
    if not problems:
        return None
    more = len(problems) - _SHOWN_PROBLEMS
    shown = "; ".join(problems[:_SHOWN_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return RunError("harness", f"the spec pages do not match the manifest ({shown}); the pages are stale: {REGENERATE}")


def _mode_error(mode: GraphMode, impl: Implementation) -> RunError | None:
    """The run-level error of an implementation that cannot be put in ``mode``, if any."""
    missing = [] if impl.module is None else mode.missing_setters(impl.module)
    if not missing:
        return None
    names = " and ".join(f"nnx.{name}" for name in missing)
    return RunError("implementation", f"--graph-mode {mode.value} needs {names}, which {impl.name} lacks")


@dataclass
class Suite:
    """Everything a suite run set up, and what it must undo."""

    settings: Settings
    impl: Implementation
    jax_env: devices.JaxEnvironment
    alias: ImportAlias | None
    expectations: PatternList
    baseline: PatternList  # flax's failures in the run's mode, not held against the implementation
    docs: DocSuite
    infos: dict[str, ItemInfo] = field(default_factory=dict)
    outcomes: report.Outcomes = field(default_factory=report.Outcomes)
    error: RunError | None = None  # a run-level error: no test runs
    collected: int | None = None  # tests the run collected (None until known)
    collected_ids: list[str] = field(default_factory=list)  # their node ids, in the controller
    stopped: str | None = None  # why the run stopped before its end, once it has
    run_dir: Path | None = None  # the xdist controller's folder for its workers' page claims
    recorder: coverage.Recorder | None = None  # watches the public API where tests run
    api_coverage: coverage.Collected | None = None  # what the tests exercised, where the report is built
    _yardstick: Yardstick | str | None = None
    _mode: GraphMode | None = None  # the mode the implementation was last put in (None: the run's)
    _written: float = 0.0  # when the report was last written while the run goes
    _write_cost: float = 0.0  # how long its last write took, in seconds
    _pending: threading.Timer | None = None  # a progress write put off until the interval has passed
    _writing: threading.RLock = field(default_factory=threading.RLock)  # re-entered by the SIGTERM handler
    _final: bool = False  # the final report is written: no progress write may replace it

    @classmethod
    def start(cls, config: pytest.Config) -> Suite:
        """Set JAX up, import the implementation, install the alias, read the spec."""
        settings = Settings.from_config(config)
        try:
            expected = PatternList.read(settings.expectations)
            defects = PatternList.read(settings.spec_defects)
            baseline = PatternList.read(settings.baseline)
        except (PatternFileError, OSError) as exc:
            raise pytest.UsageError(str(exc)) from None
        jax_env = devices.JaxEnvironment()
        jax_env.configure(settings.device)
        impl = Implementation.load(settings.impl)
        alias = None
        if impl.module is not None and impl.name != FLAX_NNX:
            alias = ImportAlias(impl.module)
            alias.install()
        manifest, problem = None, None
        if settings.spec_dir is None:
            problem = f"no docs_extracted/manifest.json found (use --spec-dir); {REGENERATE}"
        else:
            try:
                manifest = Manifest.read(settings.spec_dir)
            except (OSError, ValueError, KeyError) as exc:
                problem = f"cannot read the spec in {settings.spec_dir}: {exc!r}; {REGENERATE}"
        recorded = DocWarnings.read() if DOC_WARNINGS.is_file() else None
        docs = DocSuite(manifest, problem, impl, defects, settings.run_defects, settings.graph_mode, recorded)
        suite = cls(settings, impl, jax_env, alias, expected, baseline, docs)
        if impl.module is not None:
            settings.graph_mode.apply(impl.module)
        worker_input = getattr(config, "workerinput", None)
        if worker_input is not None:
            if RUN_DIR_KEY in worker_input:
                docs.claims = PageClaims(Path(worker_input[RUN_DIR_KEY]))
            return suite
        if docs_requested(config):
            suite.error = _spec_error(manifest, problem, impl.name)
        if suite.error is None and impl.module is None:
            suite.error = RunError("implementation", impl.import_failure_line)
        if suite.error is None:
            suite.error = _mode_error(settings.graph_mode, impl)
        suite.outcomes.progress = suite.write_progress
        return suite

    def stop(self) -> None:
        if self.alias is not None:
            self.alias.uninstall()
        self.jax_env.restore()
        if self.docs.claims is not None:
            self.docs.claims.close()
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def claims_folder(self) -> Path:
        """The folder where this run's xdist workers claim pages (made on first use)."""
        if self.run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix="nnx-conformance-"))
        return self.run_dir

    @property
    def exit_status(self) -> int | None:
        """The run's exit status when a run-level error decides it."""
        if self.error is None:
            return None
        return IMPL_UNAVAILABLE if self.error.kind == "implementation" else HARNESS_ERROR

    def adopt(self, item: pytest.Item) -> None:
        """Describe a collected suite test; apply its skip for a spec defect and its expectation."""
        info = describe(item)
        self.infos[item.nodeid] = info
        case = doc_case(item)
        skip = case.skip() if case is not None else None
        if skip is None:
            skip = self._baseline_skip(info.id)
        if skip is not None:
            item.add_marker(pytest.mark.skip(reason=skip.reason))
        if self.settings.timeout:
            item.add_marker(pytest.mark.timeout(self.settings.timeout, method="signal"))
        item.stash[_REPORT_INFO] = {"info": info.to_dict(), "spec_defect": skip is not None and skip.spec_defect}
        expectations.apply(item, info.id, self.expectations)

    def _baseline_skip(self, test_id: str) -> Skip | None:
        """The skip of a test flax itself fails in the run's mode (a spec defect of that mode)."""
        entry = self.baseline.match(test_id)
        if entry is None:
            return None
        mode = self.settings.graph_mode.value
        return Skip(f"{SPEC_DEFECT}flax 0.12.12 fails it in {mode} mode ({entry.reason})", spec_defect=True)

    def enter_mode(self, mode: GraphMode | None = None) -> None:
        """Put the implementation, and flax beside it if loaded, in ``mode`` (by default the run's)."""
        self._mode = mode or self.settings.graph_mode
        if self.impl.module is not None:
            self._mode.apply(self.impl.module)
        if isinstance(self._yardstick, Yardstick):
            with self._yardstick.active() as flax_nnx:
                self._mode.apply(flax_nnx)

    def note_collected(self, nodeids: list[str]) -> None:
        """In xdist's controller, which collects nothing itself: count a worker's collection,
        and mark the expectations and spec defects its test ids use."""
        tests = [nodeid for nodeid in nodeids if in_suite_nodeid(nodeid)]
        self.collected, self.collected_ids = len(tests), tests
        for nodeid in tests:
            test_id = suite_test_id(nodeid)
            self.expectations.match(test_id)
            self.baseline.match(test_id)
            if doc_page_of(nodeid) is not None:
                self.docs.collected = True
                self.docs.defects.match(test_id)

    def label(self, item: pytest.Item, test_report: pytest.TestReport) -> None:
        """Attach a suite test's info to its phase report, for the (possibly remote) report."""
        data = item.stash.get(_REPORT_INFO, None)
        if data is not None:
            setattr(test_report, INFO_ATTRIBUTE, data)

    def yardstick(self) -> Yardstick | str:
        """The real flax.nnx for parity tests (imported on first use), or why there is none."""
        if self._yardstick is None:
            self._yardstick = (
                Yardstick.load(self.impl, self.alias) if self.settings.yardstick != "none" else NO_YARDSTICK
            )
            self.enter_mode(self._mode)
        return self._yardstick

    def need_yardstick(self, item: pytest.Item) -> None:
        """Skip a test that compares with flax.nnx, as not run, when the run has no flax beside it."""
        if not compares_with_flax(item):
            return
        found = self.yardstick()
        if isinstance(found, str):
            data = item.stash.get(_REPORT_INFO, None)
            if data is not None:
                data["not_run"] = True
            pytest.skip(found)

    def end_early(self, reason: str) -> None:
        """Record why the run stops early; the tests it has not reached are not run for that reason."""
        self.stopped = self.stopped or reason
        infos = [self.infos.get(nodeid) or describe_nodeid(nodeid) for nodeid in self.collected_ids]
        self.outcomes.not_reached(infos, f"the run stopped before it: {self.stopped}")

    def partial_lines(self) -> list[str]:
        """Why the run is partial, one line per reason that tests did not run (none: it is whole)."""
        results = [result for result in list(self.outcomes.results.values()) if result.outcome is not None]
        return report.partial_lines(results, self.collected)

    def versions(self) -> dict[str, str | None]:
        jax = sys.modules.get("jax")
        return {
            "python": platform.python_version(),
            "jax": getattr(jax, "__version__", None),
            "impl": self.impl.version(),
        }

    def build_report(self, final: bool = True) -> dict[str, Any]:
        """The report; complete when ``final`` and every collected test has an outcome."""
        try:
            device = devices.describe()
        except Exception as exc:  # noqa: BLE001 - JAX itself may be what is broken
            device = f"unknown ({exc!r})"
        finished = self.outcomes.finished()
        complete = (
            final
            and self.stopped is None
            and (self.error is not None or (self.collected is not None and finished >= self.collected))
        )
        results = dict(self.outcomes.results)  # a copy: a progress write runs beside tests that still report
        covered = None if self.api_coverage is None else coverage_summary.summarize(self.api_coverage, results)
        return report.build(
            self.outcomes,
            self.impl.name,
            self.versions(),
            device,
            self.settings.graph_mode.value,
            complete=complete,
            collected=self.collected,
            error=self.error,
            coverage=covered,
        )

    def write_report(self, final: bool, built: dict[str, Any] | None = None) -> Path | None:
        """Write the JSON and Markdown reports if asked for (``built``, or the report as it stands);
        the Markdown path. Once the final report is written, progress writes do nothing."""
        if self.settings.report is None:
            return None
        with self._writing:
            if self._final:
                return None
            if final and self._pending is not None:
                self._pending.cancel()
            self._final = final
            self._written = time.monotonic()
            built = built if built is not None else self.build_report(final)
            started = time.monotonic()  # building the first report starts JAX's backends: not the write's cost
            written = report.write(built, self.settings.report)
            self._write_cost = time.monotonic() - started
            return written

    def write_progress(self) -> None:
        """Write the report marked incomplete: now, or once :data:`PROGRESS_INTERVAL` seconds (more
        for a report that takes long to write: see :data:`PROGRESS_SHARE`) have passed since the
        last write, so that a test that then runs for long leaves its predecessors on disk."""
        interval = min(PROGRESS_MAX_INTERVAL, max(PROGRESS_INTERVAL, self._write_cost / PROGRESS_SHARE))
        wait = interval - (time.monotonic() - self._written)
        if wait <= 0:
            self.write_report(final=False)
        elif self._pending is None or not self._pending.is_alive():
            self._pending = threading.Timer(wait, self.write_report, kwargs={"final": False})
            self._pending.daemon = True
            self._pending.start()
