"""Spec defects: doc examples that are the document's fault are skipped unless asked for."""

from __future__ import annotations

import json

import pytest
from specbuilder import GuidePage, write_spec

DEFECTS = "guide:g/cell:2  # flax 0.12.12 error: stale output; the guide shows an old repr\n"


@pytest.fixture
def defect_spec(pytester: pytest.Pytester) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:g",
            [
                ("x = 40", None),
                ("x = x + 2\nprint('old output')", "older output"),
                ("x", "42"),
            ],
        ),
    )
    (pytester.path / "conformance").mkdir()
    (pytester.path / "conformance" / "spec_defects.txt").write_text(DEFECTS)


def test_spec_defects_are_skipped_and_counted_apart(pytester: pytest.Pytester, run_docs, defect_spec) -> None:
    result = run_docs("--conformance-report", "report.json")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: spec defect: flax 0.12.12 error: stale output; *"])
    summary = json.loads((pytester.path / "report.json").read_text())["summary"]
    assert (summary["spec_defects"], summary["skipped"], summary["passed"]) == (1, 0, 2)


def test_a_skipped_spec_defect_still_sets_up_the_page_for_later_examples(
    pytester: pytest.Pytester, run_docs, defect_spec
) -> None:
    run_docs("-k", "cell:3").assert_outcomes(passed=1)


def test_spec_defects_run_when_asked(pytester: pytest.Pytester, run_docs, defect_spec) -> None:
    result = run_docs("--spec-defects", "run")
    result.assert_outcomes(passed=2, failed=1)


def test_spec_defects_that_match_no_example_are_reported(pytester: pytest.Pytester, run_docs, defect_spec) -> None:
    with (pytester.path / "conformance" / "spec_defects.txt").open("a") as defects:
        defects.write("guide:gone/cell:1  # flax 0.12.12 error: gone; a page that left\n")
    result = run_docs()
    result.stdout.fnmatch_lines(["warning: *spec_defects.txt:2: 'guide:gone/cell:1' matched no collected test*"])
