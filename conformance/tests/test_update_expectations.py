"""--update-expectations: the expectations file rewritten from a run's outcomes."""

from __future__ import annotations

import fnmatch

import pytest
from specbuilder import ApiPage, GuidePage, write_spec

from nnx_conformance.expectations import exact_pattern


@pytest.fixture
def spec(pytester: pytest.Pytester) -> None:
    write_spec(
        pytester.path,
        GuidePage("guide:g", [("x = 1", None), ("print(x + 1)", "3")]),
        ApiPage("graph", [("flax.nnx.split", ">>> 1\n1\n>>> 2\n2\n>>> 3\n4\n")]),
    )


def test_the_file_keeps_reasons_drops_passing_entries_and_lists_new_failures(
    pytester: pytest.Pytester, run_docs, spec
) -> None:
    expectations = pytester.path / "exp.txt"
    expectations.write_text(
        "# known failures\n"
        "guide:g/cell:1  # passes now\n"
        "graph/*  # the whole page, supposedly\n"
        "guide:gone/*  # a page that left\n"
    )
    result = run_docs("--expectations", "exp.txt", "--update-expectations")
    assert expectations.read_text() == (
        "# known failures\n"
        "graph/flax.nnx.split:3  # the whole page, supposedly\n"
        "guide:gone/*  # a page that left\n"
        "guide:g/cell:2  # TODO: write why it fails (the run said: "
        "guide:g/cell:2 (g.md:9) did not run as documented:)\n"
    )
    result.stdout.fnmatch_lines(
        [
            "*expectations updated: *exp.txt*",
            "added (write its reason in place of TODO): guide:g/cell:2",
            "removed, its tests pass: guide:g/cell:1",
            "narrowed to the tests that still fail: graph/[*]",
            "kept, matched no test of this run: guide:gone/[*] (*exp.txt:4)",
        ]
    )


def test_the_next_run_rejects_the_placeholder_reason(pytester: pytest.Pytester, run_docs, spec) -> None:
    (pytester.path / "exp.txt").write_text("")
    run_docs("--expectations", "exp.txt", "--update-expectations")
    result = run_docs("--expectations", "exp.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exp.txt:1: the entry 'guide:g/cell:2' has no reason yet ('TODO: *"])


def test_an_up_to_date_file_is_left_as_it_is(pytester: pytest.Pytester, run_docs, spec) -> None:
    text = "# header\n\nguide:g/cell:2  # prints 2\ngraph/flax.nnx.split:3  # prints 3\n"
    (pytester.path / "exp.txt").write_text(text)
    result = run_docs("--expectations", "exp.txt", "--update-expectations")
    assert (pytester.path / "exp.txt").read_text() == text
    result.stdout.fnmatch_lines(["no change"])
    assert result.ret == pytest.ExitCode.OK


def test_an_implementation_without_a_file_is_told_to_name_one(pytester: pytest.Pytester, run_docs, spec) -> None:
    result = run_docs("--update-expectations")
    result.stdout.fnmatch_lines(
        ["*fakennx has no expectations file; name one (it may be empty) with --expectations FILE"]
    )


@pytest.mark.parametrize(
    "test_id",
    [
        "transforms/test_x.py::test_y[[]cond-graph-mode[]]",
        "graph/test_a.py::test_b[x*y?z]",
        "signatures/test_api.py::test_c[a b#c]",
    ],
)
def test_an_exact_pattern_matches_its_test_id(test_id: str) -> None:
    pattern = exact_pattern(test_id)
    assert fnmatch.fnmatchcase(test_id, pattern), f"{pattern!r} does not match {test_id!r}"
    assert "#" not in pattern and " " not in pattern, f"{pattern!r} cannot stand in a pattern file"
    assert not fnmatch.fnmatchcase(test_id + "x", pattern)
