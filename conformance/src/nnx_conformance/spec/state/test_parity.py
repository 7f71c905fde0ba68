"""Parity of State with flax.nnx on drawn Module graphs: filter, split, merge,
flat_state (and its repr), from_flat_path, to_pure_dict, replace_by_pure_dict, map, map_state and the
mapping methods give flax's States, dicts and values, and leave the State as flax does;
``State.merge`` is a static method there too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

STATE_PAGE = "api state page (State methods, map_state, to_pure_dict, replace_by_pure_dict)"


def _shifted(path: tuple[Any, ...], value: Any) -> Any:
    """A drawn State's values changed in a way that depends on the path."""
    return value * 2 + len(path)


@pytest.mark.apis("State", "filterlib.to_predicate")
@pytest.mark.documented(STATE_PAGE)
@given(recipe=gs.graph_recipes(), first=gs.filter_recipes, second=gs.filter_recipes, graph=st.booleans())
def test_filter_split_and_merge_of_a_state_give_flax_states(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, first: gs.FilterRecipe, second: gs.FilterRecipe, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        state = nnx.state(gs.build(nnx, recipe).root, graph=graph)
        f, g = gs.build_filter(nnx, first), gs.build_filter(nnx, second)
        parts = state.split(f, g, ...)
        return state.filter(f), state.filter(f, g), parts, nnx.State.merge(*parts), nnx.merge_state(*parts)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("FlatState")
@pytest.mark.documented(None)
@given(recipe=gs.graph_recipes(), first=gs.filter_recipes, second=gs.filter_recipes, graph=st.booleans())
def test_filter_split_and_merge_of_a_flat_state_give_flax_flat_states(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, first: gs.FilterRecipe, second: gs.FilterRecipe, graph: bool
) -> None:
    """A FlatState's filter keeps what its filters select (the rest is dropped), split asks
    them to cover every leaf, and merge joins FlatStates back, as flax's do."""

    def scenario(nnx: Any) -> Any:
        flat = nnx.state(gs.build(nnx, recipe).root, graph=graph).flat_state()
        f, g = gs.build_filter(nnx, first), gs.build_filter(nnx, second)
        parts = flat.split(f, g, ...)
        merged = type(flat).merge(*parts)
        # a FlatState is compared by its (path, value) pairs
        return list(flat.filter(f)), [list(p) for p in flat.filter(f, g)], [list(p) for p in parts], list(merged)

    assert_same(flax_nnx, nnx, scenario)
    assert_same(
        flax_nnx,
        nnx,
        lambda nnx: [
            list(p)
            for p in nnx.state(gs.build(nnx, recipe).root, graph=graph)
            .flat_state()
            .split(gs.build_filter(nnx, first), gs.build_filter(nnx, second))
        ],
    )


@pytest.mark.apis("State", "map_state")
@pytest.mark.documented(STATE_PAGE)
@given(recipe=gs.graph_recipes(), graph=st.booleans())
def test_flat_state_map_and_mapping_methods_give_flax_values(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        state = nnx.state(gs.build(nnx, recipe).root, graph=graph)
        flat = state.flat_state()
        rebuilt = nnx.State.from_flat_path(flat)
        mapped = nnx.map_state(_shifted, state)
        return (
            list(flat),
            repr(flat),
            rebuilt,
            mapped,
            state.map(_shifted),
            list(state.keys()),
            [type(v).__name__ for v in state.values()],
            state.get("absent", "default"),
            state,
        )

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("State", "to_pure_dict", "replace_by_pure_dict")
@pytest.mark.documented("guide:checkpointing (to_pure_dict and replace_by_pure_dict round trip)")
@given(recipe=gs.graph_recipes(), graph=st.booleans())
def test_pure_dicts_round_trip_as_in_flax(nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool) -> None:
    def scenario(nnx: Any) -> Any:
        state = nnx.state(gs.build(nnx, recipe).root, graph=graph)
        pure = state.to_pure_dict()
        state.replace_by_pure_dict(jax.tree.map(lambda x: x + 1, pure))
        also = nnx.to_pure_dict(state)
        nnx.replace_by_pure_dict(state, also)
        return pure, also, state

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("State", "replace_by_pure_dict")
@pytest.mark.documented(None)
def test_replace_by_pure_dict_rejects_a_path_the_state_lacks(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        state = nnx.state(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
        state.replace_by_pure_dict({"kernel": state["kernel"][...], "scale": state["bias"][...]})
        return state

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is not None, "flax rejects a pure dict with a key the State does not have"


@pytest.mark.apis("State", "unpack")
@pytest.mark.documented(None)
@pytest.mark.parametrize("source", ["state", "unpack"])
def test_a_write_into_a_sub_state_reaches_the_state_it_came_from(nnx: Any, flax_nnx: Any, source: str) -> None:
    def scenario(nnx: Any) -> Any:
        holder = nnx.Dict(lin=nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
        state = getattr(nnx, source)(holder)
        state["lin"]["bias"] = nnx.Param(jax.numpy.full(2, 7.0))
        return nnx.state(state["lin"]), state["lin"]["bias"]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("unpack", "GraphState", "merge")
@pytest.mark.documented(None)
@pytest.mark.parametrize("filters", ["none", "Param and the rest"])
def test_unpack_gives_graph_states_that_are_mappings_not_states_as_flax(nnx: Any, flax_nnx: Any, filters: str) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        unpacked = nnx.unpack(model, *(() if filters == "none" else (nnx.Param, ...)))
        graph_states = unpacked if isinstance(unpacked, tuple) else (unpacked,)
        kinds = [
            (isinstance(g, nnx.State), isinstance(g, Mapping), sorted(g), len(jax.tree.leaves(g))) for g in graph_states
        ]
        return kinds, nnx.merge(*graph_states)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("State")
def test_a_state_made_from_a_dict_does_not_share_it_as_in_flax(nnx: Any, flax_nnx: Any) -> None:
    """Entries added to the dict afterwards are not the State's."""

    def scenario(n: Any) -> Any:
        given = {"a": jax.numpy.ones(1)}
        state = n.State(given)
        given["b"] = jax.numpy.zeros(1)
        state["c"] = jax.numpy.zeros(2)
        return sorted(state.keys()), sorted(given)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("State")
@pytest.mark.documented(None)
@pytest.mark.parametrize("called", ["on the class", "on an instance"])
def test_state_merge_is_a_static_method_as_in_flax(nnx: Any, flax_nnx: Any, called: str) -> None:
    """Called on an instance, the instance is not one of the States merged."""

    def scenario(nnx: Any) -> Any:
        _, kernel, rest = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.PathContains("kernel"), ...)
        merged = nnx.State.merge(kernel, rest) if called == "on the class" else kernel.merge(rest)
        return sorted(map(str, merged.keys()))

    assert_same(flax_nnx, nnx, scenario)


NON_EXHAUSTIVE_SPLITS = {
    "split": lambda nnx, m: nnx.split(m, nnx.Param),
    "State.split": lambda nnx, m: nnx.state(m).split(nnx.Param),
    "split_state": lambda nnx, m: nnx.split_state(nnx.state(m), nnx.Param),
}


@pytest.mark.apis("split", "State", "split_state")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", NON_EXHAUSTIVE_SPLITS)
def test_a_split_whose_filters_leave_a_remainder_shows_it_in_flax_s_words(nnx: Any, flax_nnx: Any, call: str) -> None:
    """The ValueError names what no filter took: as a FlatState of (path, Variable) pairs
    from ``split``, as a nested State from the State splits."""

    def scenario(nnx: Any) -> Any:
        try:
            NON_EXHAUSTIVE_SPLITS[call](nnx, nnx.BatchNorm(2, rngs=nnx.Rngs(0)))
        except ValueError as error:
            return str(error)
        return None

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert "non-empty remainder" in str(outcome.result), f"flax's {call} refuses the remainder"
