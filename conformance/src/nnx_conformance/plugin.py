"""The pytest plugin (entry point ``nnx_conformance``): hooks only.

It is inert unless the run collects the suite in ``nnx_conformance/spec``
(``pytest --pyargs nnx_conformance``): other pytest runs get its options and
markers, nothing else.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from hypothesis import settings as hypothesis_settings

from . import devices, hypothesis_profiles, report, settings
from .impl import ImplProxy, MissingName, Yardstick
from .items import in_suite
from .suite import KEY, Suite

MARKERS = (
    "cpu: runs only where JAX has a CPU backend",
    "gpu: runs only where JAX has a GPU backend",
    "tpu: runs only where JAX has a TPU backend",
    "multi_device: needs several JAX devices (on CPU the suite gives JAX 8)",
    "area(name): the spec page (report area) a test belongs to, e.g. area('graph')",
    "apis(*names): the nnx names a test exercises, e.g. apis('split', 'merge')",
    "documented(where): where the docs state or show what a test checks; None when only flax's observed behaviour does",
)


# Registered on import, before hypothesis' plugin reads --hypothesis-profile; the suite's
# default profile is loaded only for suite runs (other runs keep hypothesis' default).
hypothesis_profiles.register_profiles()


def _suite(config: pytest.Config) -> Suite | None:
    return config.stash.get(KEY, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if settings.suite_requested(config):
        if not config.getoption("--hypothesis-profile", None):
            hypothesis_settings.load_profile(hypothesis_profiles.DEFAULT_PROFILE)
        suite = Suite.start(config)
        config.stash[KEY] = suite
        config.pluginmanager.register(suite.outcomes, "nnx-conformance-outcomes")


def pytest_unconfigure(config: pytest.Config) -> None:
    suite = _suite(config)
    if suite is not None:
        suite.stop()
        config.pluginmanager.unregister(suite.outcomes)
        del config.stash[KEY]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    suite = _suite(metafunc.config)
    if suite is None or "doc_example" not in metafunc.fixturenames:
        return
    cases = suite.docs.cases()
    metafunc.parametrize("doc_example", cases, ids=[case.param_id for case in cases])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = _suite(config)
    if suite is None:
        return
    for item in items:
        if in_suite(item):
            suite.adopt(item)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        suite = _suite(item.config)
        if suite is not None:
            suite.outcomes.forget(item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    suite = _suite(item.config)
    if suite is None:
        return
    unmet = devices.unmet_requirement(item)
    if unmet is not None:
        pytest.skip(unmet)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    suite = _suite(item.config)
    if suite is not None and item.nodeid in suite.infos and suite.impl.module is None:
        pytest.fail(suite.impl.import_failure_line, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A missing nnx name fails its test with one line naming it, not a traceback."""
    test_report = yield
    missing = call.excinfo is not None and isinstance(call.excinfo.value, MissingName)
    if missing and test_report.failed:
        test_report.longrepr = str(call.excinfo.value)  # type: ignore[union-attr]
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


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    suite = _suite(config)
    if suite is None:
        return
    write = terminalreporter.write_line
    if suite.impl.error is not None:
        terminalreporter.section(suite.impl.import_failure, red=True)
        for line in suite.impl.error.rstrip().splitlines():
            write(line)
    checked = [("unused expectations", suite.expectations)]
    if suite.docs.collected:
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
    terminalreporter.section(f"NNX conformance: {suite.impl.name} on {built['device']}")
    for line in report.render_text(built):
        write(line)
    if suite.settings.report is not None:
        markdown = report.write(built, suite.settings.report)
        write(f"report: {suite.settings.report} and {markdown}")
