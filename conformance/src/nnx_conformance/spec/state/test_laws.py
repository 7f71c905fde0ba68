"""Laws of State: flat and pure-dict round trips, split_state/merge_state, filter_state."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import (
    VariableEntry,
    expected_groups,
    snapshot,
    state_snapshot,
    variables_by_path,
)

pytestmark = pytest.mark.kind("property")


def draw_state(nnx: Any, data: st.DataObject) -> Any:
    """The State of a drawn graph (shared references and cycles included, which only graph
    mode takes: the State laws hold whatever the run's global mode)."""
    return nnx.state(data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph"), graph=True)


def state_variables(nnx: Any, state: Any) -> dict[tuple[Any, ...], Any]:
    """The Variables of a State by path, found by walking it as a nested Mapping."""
    found: dict[tuple[Any, ...], Any] = {}

    def visit(obj: Any, path: tuple[Any, ...]) -> None:
        if isinstance(obj, nnx.Variable):
            found[path] = obj
        else:
            for key in obj:
                visit(obj[key], (*path, key))

    visit(state, ())
    return found


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("state")
@given(data=st.data())
def test_state_holds_every_variable_of_the_graph_once_at_its_first_path(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    shot = snapshot(nnx, node)
    expected = {path: entry for path, entry in shot.items() if isinstance(entry, VariableEntry)}
    problem = difference(expected, state_snapshot(nnx, nnx.state(node)))
    assert problem is None, f"state(node) differs from the node's Variables {problem}"


@pytest.mark.apis("to_flat_state", "from_flat_state")
@given(data=st.data())
def test_from_flat_state_of_to_flat_state_reproduces_the_state(nnx: Any, data: st.DataObject) -> None:
    state = draw_state(nnx, data)
    flat = nnx.to_flat_state(state)
    paths = [path for path, _ in flat]
    expected = sorted(state_variables(nnx, state))
    assert paths == expected, f"to_flat_state gave the paths {paths}, expected the State's paths in order {expected}"
    problem = difference(state_snapshot(nnx, state), state_snapshot(nnx, nnx.from_flat_state(flat)))
    assert problem is None, f"from_flat_state(to_flat_state(state)) differs from state {problem}"


@pytest.mark.apis("to_pure_dict", "replace_by_pure_dict")
@given(data=st.data())
def test_replace_by_pure_dict_of_to_pure_dict_restores_the_values(nnx: Any, data: st.DataObject) -> None:
    state = draw_state(nnx, data)
    pure = nnx.to_pure_dict(state)
    for path, variable in state_variables(nnx, state).items():
        leaf = pure
        for key in path:
            leaf = leaf[key]
        assert np.asarray(leaf).tolist() == np.asarray(variable[...]).tolist(), (
            f"to_pure_dict holds {leaf!r} at {path}, expected the Variable's value {variable[...]!r}"
        )
    changed = jax.tree.map(lambda x: x + 1, state)
    nnx.replace_by_pure_dict(changed, pure)
    problem = difference(state_snapshot(nnx, state), state_snapshot(nnx, changed))
    assert problem is None, f"replace_by_pure_dict(state + 1, to_pure_dict(state)) differs from state {problem}"


@pytest.mark.apis("split_state", "merge_state")
@given(data=st.data())
def test_split_state_groups_by_first_matching_filter_and_merge_state_undoes_it(nnx: Any, data: st.DataObject) -> None:
    state = draw_state(nnx, data)
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=True), label="filters")
    expected, _ = expected_groups(nnx, state_variables(nnx, state), filters)
    parts = nnx.split_state(state, *filters)
    parts = parts if len(filters) > 1 else (parts,)
    got = [set(state_variables(nnx, part)) for part in parts]
    assert got == expected, f"split_state(state, *{filters!r}) grouped the paths as {got}, expected {expected}"
    problem = difference(state_snapshot(nnx, state), state_snapshot(nnx, nnx.merge_state(*parts)))
    assert problem is None, f"merge_state(*split_state(state, *{filters!r})) differs from state {problem}"


@pytest.mark.apis("filter_state")
@given(data=st.data())
def test_filter_state_keeps_exactly_the_matching_variables(nnx: Any, data: st.DataObject) -> None:
    state = draw_state(nnx, data)
    filter_ = data.draw(strategies.filters(nnx), label="filter")
    (matched,), _ = expected_groups(nnx, state_variables(nnx, state), (filter_,))
    kept = nnx.filter_state(state, filter_)
    got = set(state_variables(nnx, kept))
    assert got == matched, (
        f"filter_state(state, {filter_!r}) kept {sorted(got, key=repr)}, expected {sorted(matched, key=repr)}"
    )


@pytest.mark.apis("merge_state")
@given(data=st.data())
def test_merge_state_lets_later_states_win(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    state = nnx.state(node)
    bumped = jax.tree.map(lambda x: x + 1, state)
    merged = nnx.merge_state(state, bumped)
    problem = difference(state_snapshot(nnx, bumped), state_snapshot(nnx, merged))
    assert problem is None, f"merge_state(state, state + 1) differs from state + 1 {problem}"
    assert set(state_variables(nnx, merged)) == set(variables_by_path(nnx, node)), "merge_state changed the paths"


@given(data=st.data())
def test_states_with_other_leaves_are_unequal_and_a_flat_state_split_by_one_filter_is_its_first_group(
    nnx: Any, data: st.DataObject
) -> None:
    state = draw_state(nnx, data)
    flat = nnx.to_flat_state(state)
    assert state == nnx.from_flat_state(flat), "a State equals the State rebuilt from its flat state"
    if len(flat) >= 2:
        smaller = nnx.from_flat_state(list(flat)[:-1])
        assert state != smaller and smaller != state, "a State with one leaf fewer is a different State"
    assert list(flat.split(...)) == list(flat), "split by the one filter ... is the whole flat state, not a tuple"
