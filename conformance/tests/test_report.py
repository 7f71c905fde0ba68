"""The conformance report: JSON, its Markdown rendering, and the terminal table."""

from __future__ import annotations

import json

import pytest
from specbuilder import ApiPage, GuidePage, write_spec


@pytest.fixture
def mixed_spec(pytester: pytest.Pytester) -> None:
    write_spec(
        pytester.path,
        ApiPage("graph", [("flax.nnx.split", ">>> nnx.split(1)[0]\n'graphdef'\n>>> 1\n2\n")]),
        GuidePage("guide:g", [("print(1)", "1"), ("import orbax", None)]),
        excluded={"guide:g/cell:2": "needs orbax"},
    )


def test_the_json_report_counts_outcomes_by_area(pytester: pytest.Pytester, run_docs, mixed_spec) -> None:
    run_docs("--conformance-report", "out/report.json")
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert report["impl"] == "fakennx"
    assert set(report["versions"]) == {"python", "jax", "impl"} and report["versions"]["impl"] == "0.0.1"
    assert report["device"].startswith("cpu")
    zero = dict.fromkeys(["passed", "failed", "xfailed", "xpassed", "skipped", "spec_defects", "not_run"], 0)
    assert report["summary"] == {**zero, "passed": 2, "failed": 1, "skipped": 1}
    assert report["areas"] == {
        "graph": {**zero, "passed": 1, "failed": 1},
        "guide:g": {**zero, "passed": 1, "skipped": 1},
    }
    first = report["tests"][0]
    assert {k: first[k] for k in ("id", "area", "kind", "apis", "outcome")} == {
        "id": "graph/flax.nnx.split:1",
        "area": "graph",
        "kind": "doc",
        "apis": [],
        "outcome": "passed",
    }
    assert first["duration"] >= 0 and isinstance(first["markers"], list)
    assert report["tests"][3]["message"] == "excluded from the spec: needs orbax"


def test_the_markdown_report_has_the_area_table(pytester: pytest.Pytester, run_docs, mixed_spec) -> None:
    run_docs("--conformance-report", "report.json")
    markdown = (pytester.path / "report.md").read_text()
    assert "# NNX conformance: fakennx" in markdown
    assert "| area | passed | failed | xfailed | xpassed | skipped | spec_defects | not_run | total |" in markdown
    assert "| graph | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 2 |" in markdown
    assert "| **total** | **2** | **1** | **0** | **0** | **1** | **0** | **0** | **4** |" in markdown
    assert "- `graph/flax.nnx.split:2` (failed)" in markdown


def test_the_terminal_always_shows_the_area_table(pytester: pytest.Pytester, run_docs, mixed_spec) -> None:
    result = run_docs()
    result.stdout.fnmatch_lines(
        [
            "*NNX conformance: fakennx on cpu (8 devices)*",
            "area * passed * failed * xfailed * xpassed * skipped * spec_defects * not_run * total",
            "graph * 1 * 1 * 0 * 0 * 0 * 0 * 0 * 2",
            "guide:g * 1 * 0 * 0 * 0 * 1 * 0 * 0 * 2",
            "total * 2 * 1 * 0 * 0 * 1 * 0 * 0 * 4",
        ]
    )


def test_platform_markers_skip_naming_the_missing_platform(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:g", [("1", "1")]))
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.gpu
        def test_needs_a_gpu():
            pass

        @pytest.mark.multi_device
        def test_needs_devices():
            import jax
            assert len(jax.devices()) == 8
    """
    )
    result = run_docs("test_marked.py")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: needs a gpu device; JAX has cpu"])
