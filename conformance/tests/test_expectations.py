"""Expectations: reasoned strict-xfail patterns; a listed test that passes fails the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from specbuilder import GuidePage, write_spec

from nnx_conformance.patterns import PatternFileError, PatternList


def test_every_entry_needs_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "impl.txt"
    path.write_text("# a comment\n\nguide:g/cell:1  # fails: reason\nguide:g/cell:2\n")
    with pytest.raises(PatternFileError, match=r"impl.txt:4: the entry 'guide:g/cell:2' has no reason"):
        PatternList.read(path)


def test_patterns_match_test_ids_with_fnmatch(tmp_path: Path) -> None:
    path = tmp_path / "impl.txt"
    path.write_text("guide:g/*  # the whole guide\ngraph/test_errors.py::test_a*  # reason\n")
    patterns = PatternList.read(path)
    assert patterns.match("guide:g/cell:3") is not None
    assert patterns.match("graph/test_errors.py::test_abc") is not None
    assert patterns.match("guide:h/cell:1") is None


@pytest.fixture
def two_cells(pytester: pytest.Pytester) -> None:
    write_spec(pytester.path, GuidePage("guide:g", [("1", "2"), ("1", "1")]))


def test_a_reasonless_entry_stops_the_run_at_start(pytester: pytest.Pytester, run_docs, two_cells) -> None:
    (pytester.path / "exp.txt").write_text("guide:g/cell:1\n")
    result = run_docs("--expectations", "exp.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exp.txt:1: the entry 'guide:g/cell:1' has no reason*"])


def test_a_listed_failure_is_an_xfail(pytester: pytest.Pytester, run_docs, two_cells) -> None:
    (pytester.path / "exp.txt").write_text("guide:g/cell:1  # prints 1, the guide says 2\n")
    result = run_docs("--expectations", "exp.txt")
    result.assert_outcomes(xfailed=1, passed=1)
    assert result.ret == pytest.ExitCode.OK


def test_a_listed_test_that_passes_fails_the_run(pytester: pytest.Pytester, run_docs, two_cells) -> None:
    (pytester.path / "exp.txt").write_text("guide:g/cell:*  # both fail, supposedly\n")
    result = run_docs("--expectations", "exp.txt")
    result.assert_outcomes(xfailed=1, failed=1)
    result.stdout.fnmatch_lines(["*cell:2*XPASS(strict)*both fail, supposedly*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_unused_patterns_are_reported(pytester: pytest.Pytester, run_docs, two_cells) -> None:
    (pytester.path / "exp.txt").write_text("guide:g/cell:1  # reason one\nguide:gone/*  # a page that left\n")
    result = run_docs("--expectations", "exp.txt")
    result.stdout.fnmatch_lines(["warning: *exp.txt:2: 'guide:gone/*' matched no collected test (a page that left)"])
