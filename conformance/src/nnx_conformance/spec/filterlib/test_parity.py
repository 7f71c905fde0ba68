"""Parity of filters with flax.nnx on drawn Module graphs: types, tags, ``...``, booleans,
OfType, WithTag, PathContains, Everything, Nothing and their Any / All / Not
compositions select the Variables flax selects, through ``to_predicate``, ``nnx.state``
and ``nnx.split``, in graph and tree mode."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

FILTERS_GUIDE = (
    "guide:filters_guide (filter literals, OfType, WithTag, PathContains, Any, All, Not, Everything, Nothing)"
)


@pytest.mark.apis(
    "filterlib.to_predicate", "OfType", "WithTag", "PathContains", "Any", "All", "Not", "Everything", "Nothing"
)
@pytest.mark.documented(FILTERS_GUIDE)
@given(recipe=gs.graph_recipes(), drawn=gs.filter_recipes, graph=st.booleans())
def test_a_filter_selects_the_variables_flax_selects(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, drawn: gs.FilterRecipe, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        predicate = nnx.filterlib.to_predicate(gs.build_filter(nnx, drawn))
        flat = nnx.to_flat_state(nnx.state(root, graph=graph))
        chosen = [path for path, variable in flat if predicate(path, variable)]
        return chosen, nnx.state(root, gs.build_filter(nnx, drawn), graph=graph)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("split", "Any", "Not")
@pytest.mark.documented(FILTERS_GUIDE)
@given(recipe=gs.graph_recipes(shared=True), first=gs.filter_recipes, second=gs.filter_recipes, graph=st.booleans())
def test_split_by_drawn_filters_gives_flax_partitions(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, first: gs.FilterRecipe, second: gs.FilterRecipe, graph: bool
) -> None:
    """A Variable goes to the first filter that matches it; a shared one once, in graph mode."""

    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        _, *states = nnx.split(root, gs.build_filter(nnx, first), gs.build_filter(nnx, second), ..., graph=graph)
        return states

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("PathContains", "OfType", "WithTag", "Any", "All", "Not", "filterlib.PathIn")
@pytest.mark.documented(None)
@given(first=gs.filter_recipes, second=gs.filter_recipes)
def test_filters_compare_equal_as_flax_filters_do(
    nnx: Any, flax_nnx: Any, first: gs.FilterRecipe, second: gs.FilterRecipe
) -> None:
    """Two filters built alike are equal, and hash alike, where flax's are; others differ as flax's do."""

    def scenario(nnx: Any) -> Any:
        a, b, again = gs.build_filter(nnx, first), gs.build_filter(nnx, second), gs.build_filter(nnx, first)
        path_in = nnx.filterlib.PathIn(("a", 0), ("b",))
        return {
            "built alike": (a == again, a != again, hash(a) == hash(again)),
            "drawn pair": (a == b, a != b),
            "compositions": (
                nnx.Any(a, b) == nnx.Any(again, b),
                nnx.All(a, b) == nnx.All(again, b),
                nnx.Not(a) == nnx.Not(again),
            ),
            "PathIn": (path_in == nnx.filterlib.PathIn(("a", 0), ("b",)), path_in == nnx.filterlib.PathIn(("a", 0))),
        }

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("All", "Any", "Not", "WithTag")
@pytest.mark.documented(None)
@given(first=st.sampled_from(["Param", "BatchStat"]), second=st.sampled_from(["Param", "BatchStat"]))
def test_combined_filters_compare_and_tags_match_as_in_flax(nnx: Any, flax_nnx: Any, first: str, second: str) -> None:
    """All, Any and Not are equal when their filters are; a tag built at run time matches
    the equal tag a Variable was given."""
    tag = "".join(["al", "pha"])

    def scenario(nnx: Any) -> Any:
        a, b = getattr(nnx, first), getattr(nnx, second)
        layer = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
        layer.extra = nnx.Param(jnp.ones(1), tag="alpha")
        return (
            [nnx.All(a) == nnx.All(b), nnx.Any(a, "x") == nnx.Any(b, "x"), nnx.Not(a) == nnx.Not(b)],
            [path for path, _ in nnx.state(layer, nnx.WithTag(tag)).flat_state()],
        )

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("All", "Any", "Not", "PathContains", "WithTag", "Everything", "Nothing")
@pytest.mark.documented(None)
def test_composed_filters_repr_as_flax_s(nnx: Any, flax_nnx: Any) -> None:
    """All, Any and Not show the filters they compose, as flax's reprs do (filters whose
    reprs name no module, so that both implementations can show the same text)."""

    def scenario(nnx: Any) -> Any:
        parts = (nnx.PathContains("a"), nnx.WithTag("t"))
        return [repr(nnx.All(*parts)), repr(nnx.Any(*parts)), repr(nnx.Not(parts[0])), repr(nnx.Not(nnx.Nothing()))]

    assert_same(flax_nnx, nnx, scenario)
