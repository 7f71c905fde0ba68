"""The ``flax_nnx`` fixture's yardstick: the real flax.nnx, or why the tests that compare with it do not run."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import types

import pytest
from suiteruns import REPO_SPEC, SuiteRun, importable, needs_repo_spec, run_suite

from nnx_conformance.impl import NO_FLAX, NO_YARDSTICK, Implementation, ImportAlias, Yardstick


def test_flax_under_test_is_its_own_yardstick() -> None:
    flax_nnx = types.ModuleType("flax.nnx")
    yardstick = Yardstick.load(Implementation("flax.nnx", flax_nnx), None)
    assert isinstance(yardstick, Yardstick) and yardstick.nnx is flax_nnx, "flax.nnx under test is compared with itself"
    with yardstick.active() as active:
        assert active is flax_nnx, "with no import alias, the yardstick is active as it is"


def test_parity_needs_flax_installed_beside_the_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("fakennx")
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(lambda cls, *args, **kwargs: None))
    assert Yardstick.load(Implementation("fakennx", fake), ImportAlias(fake)) == NO_FLAX


COMPARING = "nnx_conformance.spec.graph.test_node_utilities"
"""A suite module with three property tests and two tests that compare with flax."""


def _outcomes(run: SuiteRun) -> dict[str, tuple[str, str]]:
    return {t["id"].rpartition("::")[2]: (t["outcome"], t["message"]) for t in run.report["tests"]}


@needs_repo_spec()
@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (("--yardstick", "none"), {}, NO_YARDSTICK),
        ((), {"NNX_YARDSTICK": "none"}, NO_YARDSTICK),
        ((), {}, NO_FLAX),
    ],
    ids=["--yardstick none", "NNX_YARDSTICK=none", "flax missing"],
)
def test_without_flax_the_tests_that_compare_with_it_do_not_run_and_the_run_says_it_is_partial(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: dict[str, str], reason: str
) -> None:
    importable(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if importlib.util.find_spec("flax") is not None and not env and not args:
        pytest.skip("flax is installed here: the yardstick is found")
    run = run_suite(pytester, "nnx_reference", REPO_SPEC, *args, module=COMPARING)
    outcomes = _outcomes(run)
    not_run = {name for name, (outcome, message) in outcomes.items() if outcome == "not_run"}
    assert not_run and all(outcomes[name][1] == reason for name in not_run), (
        "each test that compares with flax says why it did not run"
    )
    assert all(name.startswith(("test_is_graph_node", "test_a_callable_pytree")) for name in not_run), (
        "only the tests that compare with flax do not run"
    )
    assert {outcome for name, (outcome, _) in outcomes.items() if name not in not_run} == {"passed"}, "the others run"
    line = f"{len(not_run)} of {len(outcomes)} tests did not run: {reason}"
    assert run.report["complete"] and run.report["partial"] == [line], (
        "the report is complete and says the run is partial"
    )
    markdown = (pytester.path / "report.md").read_text()
    assert f"Partial run: {line}." in markdown.splitlines(), "the Markdown says in one line that the run is partial"
    assert run.result.outlines[-1] == f"partial run: {line}", "the console's last line says that the run is partial"
    assert run.result.ret == pytest.ExitCode.OK, "tests that did not run fail nothing"


@needs_repo_spec()
def test_yardstick_only_runs_the_tests_that_compare_with_flax_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    importable(monkeypatch)
    run = run_suite(pytester, "nnx_reference", REPO_SPEC, "--yardstick", "only", "--collect-only", module=COMPARING)
    run.result.stdout.fnmatch_lines(["*3 deselected*"])
