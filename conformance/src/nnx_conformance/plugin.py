"""The pytest plugin (entry point ``nnx_conformance``): hooks only.

It is inert unless the run collects the suite in ``nnx_conformance/spec``
(``pytest --pyargs nnx_conformance``): other pytest runs get its options and
markers, nothing else.
"""

from __future__ import annotations

import signal
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from . import (
    artifacts,
    coverage,
    coverage_summary,
    devices,
    graph_modes,
    hypothesis_profiles,
    isolation,
    report,
    scheduling,
    settings,
)
from .impl import ImplProxy, MissingName, Yardstick
from .items import DOCS_MODULE, describe, doc_case, in_suite, in_suite_nodeid
from .manifest import Manifest
from .report import RunError
from .suite import KEY, Suite, compares_with_flax

MARKERS = (
    "cpu: runs only where JAX has a CPU backend",
    "gpu: runs only where JAX has a GPU backend",
    "tpu: runs only where JAX has a TPU backend",
    "multi_device: needs several JAX devices (on CPU the suite gives JAX 8)",
    "kind(name): what a hand-written test compares: property, differential, signature or error",
    "area(name): a finer report area than a test's folder under spec/, a page under it, e.g. area('nn/linear')",
    "apis(*names): the nnx names a test exercises, e.g. apis('split', 'merge')",
    "documented(where): where the docs state or show what a test checks; None when only flax's observed behaviour does",
    "newer_flax(reason): the guide shows what only a flax newer than the pin does; the test checks the pin's behaviour",
    "graph_mode(mode): the test checks a law of that global mode ('graph' or 'tree'), which it runs in whatever "
    "--graph-mode says",
)


# Registered on import, before hypothesis' plugin reads --hypothesis-profile; the suite's
# default profile is loaded only for suite runs (other runs keep hypothesis' default).
hypothesis_profiles.register_profiles()


def _suite(config: pytest.Config) -> Suite | None:
    return config.stash.get(KEY, None)


class XdistController:
    """The suite's hooks in pytest-xdist's controller process."""

    def __init__(self, suite: Suite, config: pytest.Config) -> None:
        self.suite = suite
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[isolation.RUN_DIR_KEY] = str(self.suite.claims_folder())

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.suite.collected is None:  # every worker collects the same tests
            self.suite.note_collected(list(ids))

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> scheduling.PageScheduling:
        return scheduling.PageScheduling(config, log)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        isolation.settle_crash(crashitem, report, sched, self.suite.run_dir)
        isolation.spare_restart(self.config)


class CollectionErrors:
    """Turns a suite module that cannot be collected into a harness error."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and in_suite_nodeid(report.nodeid) and self.suite.error is None:
            last = (str(report.longrepr).strip().splitlines() or ["?"])[-1]
            self.suite.error = RunError("harness", f"the suite cannot collect {report.nodeid}: {last}")


class Termination:
    """Writes the report when the run is stopped with SIGTERM, then interrupts the run."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.previous = signal.signal(signal.SIGTERM, self)

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.suite.write_report(final=False)
        self.suite.stopped = f"it was stopped by signal {signum} ({signal.Signals(signum).name})"
        raise KeyboardInterrupt(f"stopped by signal {signum}")

    def restore(self) -> None:
        signal.signal(signal.SIGTERM, self.previous)


_TERMINATION = pytest.StashKey[Termination]()
_XDIST_HOOKS = "nnx-conformance-xdist"
_WORKER_GUARD = "nnx-conformance-worker-guard"


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)
    artifacts.add_options(parser)
    coverage.add_options(parser)


@pytest.hookimpl(tryfirst=True)  # before xdist's pytest_configure reads the distribution mode
def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if not settings.suite_requested(config):
        return
    if not config.getoption("--hypothesis-profile", None):
        hypothesis_settings.load_profile(hypothesis_profiles.DEFAULT_PROFILE)
    suite = Suite.start(config)
    config.stash[KEY] = suite
    config.pluginmanager.register(suite.outcomes, "nnx-conformance-outcomes")
    if suite.impl.module is not None:
        suite.recorder, suite.api_coverage = coverage.start(config, suite.impl.module)
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None:
        if isolation.RUN_DIR_KEY in worker_input:
            guard = isolation.WorkerGuard(Path(worker_input[isolation.RUN_DIR_KEY]), worker_input["workerid"])
            config.pluginmanager.register(guard, _WORKER_GUARD)
        return
    config.pluginmanager.register(CollectionErrors(suite), "nnx-conformance-collection")
    distributed = getattr(config.option, "dist", "no") != "no"
    if suite.error is not None and distributed:
        config.option.dist = "no"  # nothing will run: no workers to start
    elif distributed:
        config.pluginmanager.register(XdistController(suite, config), _XDIST_HOOKS)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        config.stash[_TERMINATION] = Termination(suite)


def pytest_unconfigure(config: pytest.Config) -> None:
    termination = config.stash.get(_TERMINATION, None)
    if termination is not None:
        termination.restore()
        del config.stash[_TERMINATION]
    suite = _suite(config)
    if suite is not None:
        suite.stop()
        coverage.stop(config, suite.recorder)
        for name in ("nnx-conformance-outcomes", "nnx-conformance-collection", _XDIST_HOOKS, _WORKER_GUARD):
            plugin = config.pluginmanager.get_plugin(name)
            if plugin is not None:
                config.pluginmanager.unregister(plugin)
        del config.stash[KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    """A run-level error, in one line, before anything runs."""
    suite = _suite(config)
    if suite is None or suite.error is None:
        return None
    return f"error: {suite.error.message}; no test of the suite runs"


def pytest_sessionstart(session: pytest.Session) -> None:
    suite = _suite(session.config)
    if suite is not None and not hasattr(session.config, "workerinput"):
        suite.write_report(final=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    suite = _suite(metafunc.config)
    if suite is None or "doc_example" not in metafunc.fixturenames:
        return
    cases = suite.docs.cases()
    metafunc.parametrize("doc_example", cases, ids=[case.param_id for case in cases])


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: the doc count is the manifest's
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = _suite(config)
    if suite is None:
        return
    for item in items:
        if in_suite(item):
            suite.adopt(item)
    manifest = suite.docs.manifest
    docs = sum(Path(item.path) == DOCS_MODULE for item in items)
    if suite.error is None and manifest is not None and docs:
        promised = sum(len(page.examples) for page in manifest.pages)
        if docs != promised:
            suite.error = RunError(
                "harness", f"the suite collected {docs} doc examples, the manifest promises {promised}"
            )
    if suite.settings.kinds is not None or suite.settings.yardstick == "only":
        _keep_selected(config, items, suite)


def _keep_selected(config: pytest.Config, items: list[pytest.Item], suite: Suite) -> None:
    """Deselect the suite's tests whose kind ``--kinds`` does not name, and with ``--yardstick only``
    those that do not compare with flax.nnx."""
    kinds, only = suite.settings.kinds, suite.settings.yardstick == "only"
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        wanted = not in_suite(item) or (
            (kinds is None or suite.infos[item.nodeid].kind in kinds) and (not only or compares_with_flax(item))
        )
        (kept if wanted else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count the suite's tests; after a run-level error, record them as not run, and run none."""
    suite = _suite(session.config)
    if suite is None or hasattr(session.config, "workerinput"):
        return
    tests = [item for item in session.items if in_suite(item)]
    suite.collected, suite.collected_ids = len(tests), [item.nodeid for item in tests]
    if suite.error is not None:
        for item in tests:  # a collection stopped by -x never reached pytest_collection_modifyitems
            info = suite.infos.get(item.nodeid) or describe(item)
            suite.outcomes.not_run(info, suite.error.message)
        session.items[:] = [item for item in session.items if not in_suite(item)]


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around the terminal's summary: its last line comes after pytest's
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    """Give the tests the run did not reach their reason; after pytest's summary line, say why
    the run is partial; write the final report if the terminal's summary did not."""
    suite = _suite(session.config)
    if suite is None or hasattr(session.config, "workerinput"):
        return (yield)
    if suite.exit_status is not None:
        session.exitstatus = suite.exit_status
    if not session.config.option.collectonly and suite.outcomes.finished() < len(suite.collected_ids):
        suite.end_early(_stop_reason(session, suite, exitstatus))
    result = yield
    suite.write_report(final=True)
    partial = suite.partial_lines()
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    if partial and terminal is not None:
        terminal.write_line(f"partial run: {'; '.join(partial)}", yellow=True, bold=True)
    return result


def _stop_reason(session: pytest.Session, suite: Suite, exitstatus: int) -> str:
    """Why a run ended before every collected test had an outcome."""
    dsession = session.config.pluginmanager.get_plugin("dsession")
    why = (
        suite.stopped or session.shouldfail or session.shouldstop or getattr(dsession, "_summary_report", None)
    )  # xdist's: why it shut its workers down
    if not why and exitstatus == pytest.ExitCode.INTERRUPTED:
        why = "it was interrupted"
    return str(why or f"it ended with exit status {int(exitstatus)}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    suite = _suite(item.config)
    if suite is None:
        return
    unmet = devices.unmet_requirement(item)
    if unmet is not None:
        pytest.skip(unmet)
    if in_suite(item) and doc_case(item) is None:  # a doc page sets the mode once, when it starts
        suite.enter_mode(graph_modes.pinned(item))
        suite.need_yardstick(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Label a suite test's report; a missing nnx name or a timeout fails it with one line,
    and so, in a run of one process, does pytest's failure to build the report."""
    suite = _suite(item.config)
    try:
        test_report = yield
    except Exception as error:
        if suite is None or hasattr(item.config, "workerinput"):  # a worker ends itself: see WorkerGuard
            raise
        test_report = isolation.unreported_failure(item, call, error)
    if suite is None:
        return test_report
    suite.label(item, test_report)
    if test_report.failed and call.excinfo is not None:
        if isinstance(call.excinfo.value, MissingName):
            test_report.longrepr = str(call.excinfo.value)
        elif isolation.is_timeout(call.excinfo):
            marker = item.get_closest_marker("timeout")
            limit = float(marker.args[0]) if marker is not None and marker.args else suite.settings.timeout
            test_report.longrepr = isolation.timeout_message(limit)
    return test_report


@pytest.fixture(scope="session")
def nnx(request: pytest.FixtureRequest) -> Any:
    """The implementation under test; a name it lacks fails the test that asks for it."""
    suite = _suite(request.config)
    if suite is None:
        pytest.fail("the nnx fixture belongs to the conformance suite (nnx_conformance/spec)", pytrace=False)
    if suite.impl.module is None:
        return None
    return ImplProxy(suite.impl.module, suite.impl.name)


@pytest.fixture(scope="session")
def flax_nnx(request: pytest.FixtureRequest) -> Yardstick:
    """The real flax.nnx beside the implementation under test, for parity tests."""
    suite = _suite(request.config)
    if suite is None:
        pytest.fail("the flax_nnx fixture belongs to the conformance suite (nnx_conformance/spec)", pytrace=False)
    if suite.impl.module is None:
        pytest.fail(suite.impl.import_failure_line, pytrace=False)
    found = suite.yardstick()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def spec_manifest(request: pytest.FixtureRequest) -> Manifest:
    """The spec's manifest (``--spec-dir``), for tests that run its pages themselves."""
    suite = _suite(request.config)
    if suite is None:
        pytest.fail("the spec_manifest fixture belongs to the conformance suite (nnx_conformance/spec)", pytrace=False)
    if suite.docs.manifest is None:
        pytest.fail(suite.docs.problem or "no spec pages", pytrace=False)
    return suite.docs.manifest


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    suite = _suite(config)
    if suite is None:
        return
    write = terminalreporter.write_line
    if suite.error is not None:
        terminalreporter.section(f"run-level error ({suite.error.kind}): no test of the suite ran", red=True)
        write(suite.error.message)
        if suite.error.kind == "implementation" and suite.impl.error is not None:
            for line in suite.impl.error.rstrip().splitlines():
                write(line)
    # xdist's workers report what -k, -m and --kinds left: patterns of deselected tests show as unused.
    selected = (
        config.option.keyword or config.option.markexpr or suite.settings.kinds or suite.settings.yardstick == "only"
    )
    checked = (
        []
        if selected and config.pluginmanager.has_plugin(_XDIST_HOOKS)
        else [("unused expectations", suite.expectations), ("unused baseline entries", suite.baseline)]
    )
    if checked and suite.docs.collected:
        checked.append(("unused spec defects", suite.docs.defects))
    for title, patterns in checked:
        unused = patterns.unused()
        if unused:
            terminalreporter.section(title, yellow=True)
            for entry in unused:
                write(f"warning: {entry.source}: {entry.pattern!r} matched no collected test ({entry.reason})")
    if config.option.collectonly:
        return
    built = suite.build_report()
    terminalreporter.section(f"NNX conformance: {suite.impl.name} on {built['device']}, {built['graph_mode']} mode")
    for line in [*report.render_text(built), *coverage_summary.text_lines(built)]:
        write(line)
    artifacts.finish(suite, built, terminalreporter)
    if suite.settings.report is not None:
        markdown = suite.write_report(final=True, built=built)
        write(f"report: {suite.settings.report} and {markdown}")
