"""Laws of the graph API: split/merge, state/update, clone, pop, graphdef, iter_graph.

A law drawn on graphs with shared references and cycles is graph mode's: the test pins
the global graph mode (tree mode refuses such graphs, see test_errors and test_mode_matrix);
a law drawn in either mode passes ``graph=`` to every call."""

from __future__ import annotations

from typing import Any

import jax
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
    walk,
)

pytestmark = pytest.mark.kind("property")


def group_paths(nnx: Any, states: tuple[Any, ...]) -> list[set[tuple[Any, ...]]]:
    """The Variable paths held by each State."""
    return [
        {path for path, entry in state_snapshot(nnx, state).items() if isinstance(entry, VariableEntry)}
        for state in states
    ]


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("split", "merge")
@given(data=st.data())
def test_merge_of_split_reproduces_the_graph_with_its_shared_references(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=True), label="filters")
    graphdef, *states = nnx.split(node, *filters)
    merged = nnx.merge(graphdef, *states)
    assert type(merged) is type(node), f"merge returned a {type(merged).__name__}, expected a {type(node).__name__}"
    problem = difference(snapshot(nnx, node), snapshot(nnx, merged))
    assert problem is None, f"merge(*split(node, *{filters!r})) differs from node {problem}"


@pytest.mark.apis("split", "merge")
@given(data=st.data())
def test_merge_of_split_reproduces_the_tree_in_tree_mode(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=True), label="filters")
    graphdef, *states = nnx.split(node, *filters, graph=False)
    merged = nnx.merge(graphdef, *states)
    problem = difference(snapshot(nnx, node), snapshot(nnx, merged))
    assert problem is None, f"merge(*split(node, *{filters!r}, graph=False)) differs from node {problem}"


@pytest.mark.apis("split")
@given(data=st.data())
def test_split_puts_every_variable_in_the_group_of_the_first_filter_that_matches_it(
    nnx: Any, data: st.DataObject
) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.graphs(nnx, shared=graph, cycles=graph), label="graph")
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=True), label="filters")
    expected, _ = expected_groups(nnx, variables_by_path(nnx, node), filters)
    _, *states = nnx.split(node, *filters, graph=graph)
    assert len(states) == len(filters), f"split with {len(filters)} filters returned {len(states)} States"
    actual = group_paths(nnx, tuple(states))
    assert actual == expected, f"split(node, *{filters!r}) grouped the Variables as {actual}, expected {expected}"


@pytest.mark.apis("split")
@given(data=st.data())
def test_split_without_a_catch_all_rejects_unmatched_variables(nnx: Any, data: st.DataObject) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.trees(nnx), label="tree")
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=False), label="filters")
    _, unmatched = expected_groups(nnx, variables_by_path(nnx, node), filters)
    if unmatched:
        with pytest.raises(ValueError, match=r"Non-exhaustive filters"):
            nnx.split(node, *filters, graph=graph)
    else:
        _, *states = nnx.split(node, *filters, graph=graph)
        assert len(states) == len(filters), (
            f"split with {len(filters)} exhaustive filters returned {len(states)} States"
        )


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("split", "state")
@given(data=st.data())
def test_state_returns_the_states_of_split(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    filters = data.draw(strategies.filter_sequences(nnx, catch_all=True), label="filters")
    _, *split_states = nnx.split(node, *filters)
    states = nnx.state(node, *filters)
    states = states if len(filters) > 1 else (states,)
    for index, (expected, actual) in enumerate(zip(split_states, states, strict=True)):
        problem = difference(state_snapshot(nnx, expected), state_snapshot(nnx, actual))
        assert problem is None, f"state(node, *{filters!r})[{index}] differs from split's: {problem}"


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("state", "update")
@given(data=st.data())
def test_update_with_the_nodes_own_state_changes_nothing(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    before, variables = snapshot(nnx, node), variables_by_path(nnx, node)
    nnx.update(node, nnx.state(node))
    problem = difference(before, snapshot(nnx, node))
    assert problem is None, f"update(node, state(node)) changed the node {problem}"
    replaced = [path for path, variable in variables_by_path(nnx, node).items() if variables[path] is not variable]
    assert not replaced, f"update replaced the Variable objects at {replaced}, expected it to keep them"


def _bumped_state(nnx: Any, node: Any, chosen: set[Any], only_chosen: bool) -> Any:
    """A State of ``node`` where the Variables at ``chosen`` hold their values plus one,
    built from new Variables (jax.tree.map on a Variable keeps its type and metadata)."""
    pairs = []
    for path, variable in variables_by_path(nnx, node).items():
        if path in chosen:
            pairs.append((path, jax.tree.map(lambda x: x + 1, variable)))
        elif not only_chosen:
            pairs.append((path, jax.tree.map(lambda x: x, variable)))
    return nnx.from_flat_state(pairs)


@pytest.mark.apis("update", "from_flat_state")
@given(data=st.data())
def test_update_changes_exactly_the_modified_variables_and_keeps_the_variable_objects(
    nnx: Any, data: st.DataObject
) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    variables = variables_by_path(nnx, node)
    chosen = data.draw(
        st.sets(st.sampled_from(sorted(variables, key=repr))) if variables else st.just(set()), label="paths to modify"
    )
    only_chosen = data.draw(st.booleans(), label="update with only the modified Variables")
    before = snapshot(nnx, node)
    nnx.update(node, _bumped_state(nnx, node, chosen, only_chosen))
    after = snapshot(nnx, node)
    for path, variable in variables_by_path(nnx, node).items():
        assert variable is variables[path], f"update replaced the Variable object at {path}, expected it kept"
        old, new = before[path], after[path]
        want = [v + 1 for v in _flat(old.values)] if path in chosen else _flat(old.values)
        assert _flat(new.values) == want, f"Variable at {path} holds {new.values} after update, expected {want}"
        assert (new.type, new.metadata) == (old.type, old.metadata), (
            f"update changed the type or metadata at {path}: {old.type.__name__} {old.metadata} "
            f"became {new.type.__name__} {new.metadata}"
        )


def _flat(values: Any) -> list[Any]:
    return [x for item in values for x in _flat(item)] if isinstance(values, list) else [values]


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("clone")
@given(data=st.data())
def test_clone_is_an_equal_graph_that_shares_no_variable_with_the_original(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    before = snapshot(nnx, node)
    copy = nnx.clone(node)
    problem = difference(before, snapshot(nnx, copy))
    assert problem is None, f"clone(node) differs from node {problem}"
    originals = {id(v) for v in variables_by_path(nnx, node).values()}
    shared = [path for path, v in variables_by_path(nnx, copy).items() if id(v) in originals]
    assert not shared, f"clone(node) shares the Variables at {shared} with node, expected new Variables"
    for variable in variables_by_path(nnx, copy).values():
        variable[...] = variable[...] + 1
    problem = difference(before, snapshot(nnx, node))
    assert problem is None, f"writing to the clone changed the original {problem}"


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("clone")
@given(data=st.data())
def test_clone_without_copying_variables_shares_every_variable(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    copy = nnx.clone(node, variables=False)
    assert copy is not node, "clone(node, variables=False) returned node itself, expected a new graph"
    problem = difference(snapshot(nnx, node), snapshot(nnx, copy))
    assert problem is None, f"clone(node, variables=False) differs from node {problem}"
    originals = variables_by_path(nnx, node)
    own = [path for path, v in variables_by_path(nnx, copy).items() if v is not originals[path]]
    assert not own, f"clone(node, variables=False) has new Variables at {own}, expected the original ones"


@pytest.mark.apis("pop")
@given(data=st.data())
def test_pop_removes_and_returns_exactly_the_filtered_variables(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, sequences=False), label="tree without Variables in sequences")
    filter_ = data.draw(strategies.filters(nnx), label="filter")
    variables = variables_by_path(nnx, node)
    (matched,), _ = expected_groups(nnx, variables, (filter_,))
    before = snapshot(nnx, node)
    popped = nnx.pop(node, filter_)
    popped_entries = state_snapshot(nnx, popped)
    assert set(popped_entries) == matched, (
        f"pop(node, {filter_!r}) returned {sorted(popped_entries, key=repr)}, expected {sorted(matched, key=repr)}"
    )
    remaining = {path for path, entry in snapshot(nnx, node).items() if isinstance(entry, VariableEntry)}
    expected_remaining = set(variables) - matched
    assert remaining == expected_remaining, (
        f"after pop(node, {filter_!r}) the node holds Variables at {sorted(remaining, key=repr)}, "
        f"expected {sorted(expected_remaining, key=repr)}"
    )
    for path in matched:
        assert popped_entries[path] == before[path], (
            f"pop returned {popped_entries[path]} at {path}, expected {before[path]}"
        )


@pytest.mark.apis("graphdef", "split", "clone")
@given(data=st.data())
def test_equal_structures_have_equal_and_equally_hashed_graphdefs(nnx: Any, data: st.DataObject) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.graphs(nnx, shared=graph, cycles=graph), label="graph")
    first, second = nnx.graphdef(node, graph=graph), nnx.graphdef(nnx.clone(node, graph=graph), graph=graph)
    assert first == second, f"graphdef(node) != graphdef(clone(node)) with graph={graph}: {first} vs {second}"
    assert hash(first) == hash(second), f"equal graphdefs hash to {hash(first)} and {hash(second)}"
    from_split = nnx.split(node, graph=graph)[0]
    assert from_split == first, f"split(node)[0] != graphdef(node) with graph={graph}"


@pytest.mark.apis("graphdef")
@given(data=st.data())
def test_different_structures_have_different_graphdefs(nnx: Any, data: st.DataObject) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.trees(nnx), label="tree")
    change = data.draw(st.sampled_from(["static attribute", "Variable attribute", "static value"]), label="change")
    other = nnx.clone(node)
    if change == "static attribute":
        other.extra = 1
    elif change == "Variable attribute":
        other.extra = nnx.Param(jax.numpy.zeros(()))
    else:
        node.flag, other.flag = 1, 2
    first, second = nnx.graphdef(node, graph=graph), nnx.graphdef(other, graph=graph)
    assert first != second, f"graphdefs are equal after adding a {change} (graph={graph}), expected them to differ"


@pytest.mark.apis("iter_graph")
@given(data=st.data())
def test_iter_graph_visits_each_node_and_variable_once_after_its_children(nnx: Any, data: st.DataObject) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.graphs(nnx, shared=graph, cycles=graph), label="graph")
    visits = [
        (path, value)
        for path, value in nnx.iter_graph(node, graph=graph)
        if isinstance(value, (nnx.Variable, nnx.Pytree))
    ]
    counts: dict[int, int] = {}
    for _, value in visits:
        counts[id(value)] = counts.get(id(value), 0) + 1
    repeated = [path for path, value in visits if counts[id(value)] > 1]
    assert not repeated, f"iter_graph visited the objects at {repeated} more than once"
    expected = set(walk(nnx, node)[1])
    visited = [path for path, _ in visits]
    assert set(visited) == expected, (
        f"iter_graph visited {sorted(visited, key=repr)}, expected {sorted(expected, key=repr)}"
    )
    position = {path: index for index, path in enumerate(visited)}
    early = [
        (path, prefix)
        for path in visited
        for prefix in (path[:n] for n in range(len(path)))
        if prefix in position and position[prefix] < position[path]
    ]
    assert not early, f"iter_graph yielded a node before its descendant, (descendant, node): {early}"


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("flatten", "unflatten")
@given(data=st.data())
def test_unflatten_of_flatten_reproduces_the_graph(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    graphdef, flat_state = nnx.flatten(node)
    problem = difference(snapshot(nnx, node), snapshot(nnx, nnx.unflatten(graphdef, flat_state)))
    assert problem is None, f"unflatten(*flatten(node)) differs from node {problem}"
