"""The flax import alias: doc examples' flax imports resolve to the implementation."""

from __future__ import annotations

import sys

import pytest
from specbuilder import GuidePage, write_spec


def test_flax_imports_in_examples_resolve_to_the_implementation(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:imports",
            [
                ("from flax import nnx\nimport fakennx\nnnx is fakennx", "True"),
                ("import flax\nflax.nnx.split(1)", "('graphdef', 1)"),
                ("from flax.nnx import split, graphlib\nsplit is graphlib.split", "True"),
                ("import flax.nnx.graphlib\nflax.nnx.graphlib is fakennx.graphlib", "True"),
                ("from flax.nnx.nn.linear import Linear\nLinear.__module__", "'fakennx.nn.linear'"),
                ("import flax.nnx.nn.linear as linear\nlinear.__spec__.name", "'fakennx.nn.linear'"),
            ],
        ),
    )
    run_docs().assert_outcomes(passed=6)


def test_other_flax_modules_import_but_any_use_fails_naming_them(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:imports",
            [
                ("import flax.traverse_util", None),
                ("flax.traverse_util.flatten_dict({})", None),
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AttributeError: flax.traverse_util is outside flax.nnx*"
            "flax.traverse_util.flatten_dict is not part of the spec*"
        ]
    )


def test_the_alias_is_removed_when_the_run_ends(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:imports", [("from flax import nnx", None)]))
    run_docs().assert_outcomes(passed=1)
    assert "flax" not in sys.modules and "flax.nnx" not in sys.modules
    assert not any(type(finder).__name__ == "ImportAlias" for finder in sys.meta_path)


def test_a_run_that_is_not_the_suite_gets_no_alias(pytester: pytest.Pytester, fake_impl: str) -> None:
    pytester.makepyfile(
        test_plain="""
        import pytest

        def test_flax_is_not_importable():
            with pytest.raises(ImportError):
                import flax.nnx
    """
    )
    result = pytester.runpytest("--impl", fake_impl, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "NNX conformance" not in result.stdout.str()
