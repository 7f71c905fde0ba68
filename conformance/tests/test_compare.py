"""Comparing two JSON reports: regressions, fixes, the change per area, and the exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nnx_conformance.compare import compare, main, render

OUTCOMES = ("passed", "failed", "xfailed", "xpassed", "skipped", "spec_defects")


def report(impl: str, **tests: tuple[str, str]) -> dict[str, Any]:
    """A report of ``tests``: test id (``__`` for ``/``) -> (area, outcome)."""
    entries = [
        {"id": name.replace("__", "/"), "area": area, "outcome": outcome, "message": f"{name} {outcome}"}
        for name, (area, outcome) in tests.items()
    ]
    areas: dict[str, dict[str, int]] = {}
    for entry in entries:
        areas.setdefault(entry["area"], dict.fromkeys(OUTCOMES, 0))[entry["outcome"]] += 1
    summary = {o: sum(counts[o] for counts in areas.values()) for o in OUTCOMES}
    return {"impl": impl, "summary": summary, "areas": areas, "tests": entries}


BEFORE = report(
    "nnx_reference",
    graph__a=("graph", "passed"),
    graph__b=("graph", "failed"),
    graph__c=("graph", "passed"),
    nn__d=("nn", "xfailed"),
    nn__e=("nn", "passed"),
    nn__gone=("nn", "passed"),
)
AFTER = report(
    "nnx_reference",
    graph__a=("graph", "failed"),
    graph__b=("graph", "passed"),
    graph__c=("graph", "xfailed"),
    nn__d=("nn", "xpassed"),
    nn__e=("nn", "skipped"),
    nn__new=("nn", "failed"),
)


def test_a_test_that_conformed_and_now_fails_regressed_listed_or_not() -> None:
    comparison = compare(BEFORE, AFTER)
    assert [c.id for c in comparison.regressed] == ["graph/a", "graph/c"]
    assert [c.id for c in comparison.fixed] == ["graph/b", "nn/d"]
    assert [(c.id, c.before, c.after) for c in comparison.other] == [
        ("nn/e", "passed", "skipped"),
        ("nn/gone", "passed", None),
        ("nn/new", None, "failed"),
    ]


def test_the_markdown_lists_changes_and_the_areas_that_changed() -> None:
    markdown = render(compare(BEFORE, AFTER))
    assert "2 regressed, 2 fixed, 3 other changes." in markdown
    assert "- `graph/a` (graph): passed → failed: graph__a failed" in markdown, "a regression shows its message"
    assert "- `nn/d` (nn): xfailed → xpassed" in markdown
    assert "- `nn/gone` (nn): passed → absent" in markdown
    assert "| graph | 2 → 1 (-1) | 1 | 0 → 1 (+1) | 0 | 0 | 0 |" in markdown
    assert "| **total** | 4 → 1 (-3) | 1 → 2 (+1) | 1 | 0 → 1 (+1) | 0 → 1 (+1) | 0 |" in markdown


def test_an_area_without_change_is_left_out() -> None:
    same = report("x", graph__a=("graph", "passed"), nn__b=("nn", "passed"))
    later = report("x", graph__a=("graph", "failed"), nn__b=("nn", "passed"))
    markdown = render(compare(same, later))
    assert "| graph |" in markdown and "| nn |" not in markdown


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_the_command_fails_on_a_regression_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = write(tmp_path / "a.json", BEFORE), write(tmp_path / "b.json", AFTER)
    assert main([before, after]) == 1
    assert "## Regressed" in capsys.readouterr().out
    fixed_only = report("nnx_reference", graph__a=("graph", "passed"), graph__b=("graph", "passed"))
    assert main([before, write(tmp_path / "c.json", fixed_only)]) == 0


def test_a_file_that_is_not_a_report_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"x.json is not a conformance report"):
        main([write(tmp_path / "x.json", {"tests": []}), write(tmp_path / "y.json", BEFORE)])
