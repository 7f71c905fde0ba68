"""A test that never returns fails after the suite's time limit, and the run goes on."""

from __future__ import annotations

import pytest
from specbuilder import GuidePage, write_spec
from suiteruns import BROKEN, REPO_SPEC, importable, needs_repo_spec, run_suite


def test_a_hung_example_times_out_and_the_run_goes_on(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_spec(
        pytester.path,
        GuidePage("guide:hang", [("import time\nwhile True:\n    time.sleep(1)", None), ("1", "1")]),
        GuidePage("guide:calm", [("2", "2")]),
    )
    importable(monkeypatch, pytester.path)
    run = run_suite(pytester, fake_impl, pytester.path / "docs_extracted", "--conformance-timeout", "2")
    assert run.report["complete"], "the run goes on after a timeout"
    hung = run.test("guide:hang/cell:1")
    assert (hung["outcome"], hung["message"]) == ("failed", "timed out after 2 s"), (
        "the hung example fails naming the limit"
    )
    assert hung["duration"] < 30, "the limit stops the example"
    assert run.test("guide:calm/cell:1")["outcome"] == "passed", "another page runs as usual"


@needs_repo_spec()
def test_an_implementation_whose_split_hangs_on_batchnorm_is_reported_in_full(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    importable(monkeypatch, BROKEN)
    run = run_suite(
        pytester, "nnx_split_hangs", REPO_SPEC, "-n", "2", "--conformance-timeout", "5", "-k", "graph/flax.nnx.split"
    )
    assert run.report["complete"], "the run survives the hang"
    hung = run.test("graph/flax.nnx.split:5")
    assert (hung["outcome"], hung["message"]) == ("failed", "timed out after 5 s"), (
        "splitting a BatchNorm model times out"
    )
    assert run.test("graph/flax.nnx.split:1")["outcome"] == "passed", "examples without BatchNorm run as usual"
