"""Names the implementation lacks fail the tests that use them, naming the name."""

from __future__ import annotations

import pytest
from specbuilder import ApiPage, GuidePage, write_spec


def test_a_doc_example_using_a_missing_name_fails_naming_it(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.merge",
                    """
        >>> nnx.merge(1, 2)
        3
        >>> from flax.nnx import merge
        >>> nnx.graphlib.merge
        >>> from flax.nnx import nothing_here
        >>> 1 + 1
        2
    """,
                )
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(failed=4, passed=1)
    result.stdout.fnmatch_lines(
        [
            "_* test_doc[[]graph/flax.nnx.merge:1@L5[]] _*",
            "fakennx has no attribute 'merge' (nnx.merge)",
            "_* test_doc[[]graph/flax.nnx.merge:2@L7[]] _*",
            "fakennx has no attribute 'merge' (nnx.merge)",
            "_* test_doc[[]graph/flax.nnx.merge:3@L8[]] _*",
            "fakennx.graphlib has no attribute 'merge' (nnx.graphlib.merge)",
            "_* test_doc[[]graph/flax.nnx.merge:4@L9[]] _*",
            "fakennx has no attribute 'nothing_here' (nnx.nothing_here)",
        ]
    )


def test_a_missing_submodule_fails_naming_it(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:g", [("from flax.nnx import rnglib\nimport flax.nnx.rnglib", None)]))
    result = run_docs()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["_* test_doc[[]guide:g/cell:1@L4[]] _*", "fakennx has no attribute 'rnglib' (nnx.rnglib)"]
    )


def test_the_nnx_fixture_fails_a_test_on_a_missing_name(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:g", [("1", None)]))
    pytester.makepyfile(
        test_uses_nnx="""
        def test_split_exists(nnx):
            assert nnx.split(1) == ("graphdef", 1)

        def test_merge_exists(nnx):
            nnx.merge

        def test_graphlib_merge_exists(nnx):
            nnx.graphlib.merge

        def test_hasattr_says_no(nnx):
            assert not hasattr(nnx, "merge")
    """
    )
    result = run_docs("test_uses_nnx.py")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "_* test_merge_exists _*",
            "fakennx has no attribute 'merge' (nnx.merge)",
            "_* test_graphlib_merge_exists _*",
            "fakennx.graphlib has no attribute 'merge' (nnx.graphlib.merge)",
        ]
    )
