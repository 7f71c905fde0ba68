"""Laws of the conversions between graphs and JAX pytrees: ``to_tree`` turns every graph
node of a pytree into a ``NodeStates`` (its graphdef and its States) whose leaves are the
Variables' values, ``from_tree`` turns them back, shared references included, so that a
graph can cross a plain JAX transformation; ``pure`` replaces each Variable of a tree with
its value, as its docstring states. A NodeStates keeps its metadata through ``jax.tree.map``
(differential)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import VariableEntry, snapshot, state_snapshot, variables_by_path

pytestmark = pytest.mark.kind("property")


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references and cycles
@pytest.mark.apis("to_tree", "from_tree", "NodeStates")
@given(data=st.data())
def test_from_tree_of_to_tree_reproduces_the_graph_with_its_shared_references(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.graphs(nnx, shared=True, cycles=True), label="graph")
    tree = nnx.to_tree(node)
    assert isinstance(tree, nnx.NodeStates), (
        f"to_tree of a {type(node).__name__}: expected a NodeStates, got {type(tree).__name__}"
    )
    leaves = jax.tree.leaves(tree)
    variables = variables_by_path(nnx, node)
    assert len(leaves) == len(variables) and not any(isinstance(leaf, nnx.Variable) for leaf in leaves), (
        f"to_tree's leaves: expected the values of the {len(variables)} distinct Variables, got {leaves}"
    )
    back = nnx.from_tree(tree)
    assert type(back) is type(node), (
        f"from_tree(to_tree(node)): expected a {type(node).__name__}, got a {type(back).__name__}"
    )
    problem = difference(snapshot(nnx, node), snapshot(nnx, back))
    assert problem is None, f"from_tree(to_tree(node)) differs from node {problem}"


@pytest.mark.apis("to_tree", "from_tree")
@given(data=st.data(), scale=st.integers(-3, 3))
def test_a_graph_crosses_a_jax_tree_map_through_to_tree_and_from_tree(
    nnx: Any, data: st.DataObject, scale: int
) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    scaled = nnx.from_tree(jax.tree.map(lambda leaf: leaf * scale, nnx.to_tree(node)))
    expected = {
        path: entry._replace(values=(np.asarray(entry.values) * scale).tolist())
        for path, entry in snapshot(nnx, node).items()
        if isinstance(entry, VariableEntry)
    }
    got = {path: entry for path, entry in snapshot(nnx, scaled).items() if isinstance(entry, VariableEntry)}
    problem = difference(expected, got)
    assert problem is None, (
        f"from_tree(tree_map(x * {scale}, to_tree(node))) differs from node with its values scaled {problem}"
    )


@pytest.mark.graph_mode("graph")  # one Module referenced from two places of the pytree
@pytest.mark.apis("to_tree", "from_tree")
@given(data=st.data(), static=st.integers(0, 3))
def test_to_tree_keeps_a_node_shared_across_the_pytree_and_passes_other_leaves_through(
    nnx: Any, data: st.DataObject, static: int
) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    array = np.arange(3.0, dtype=np.float32) + static
    back = nnx.from_tree(nnx.to_tree([node, {"again": node, "array": array, "static": static}]))
    assert back[0] is back[1]["again"], "from_tree(to_tree([node, {'again': node}])) gives one object at both places"
    assert np.array_equal(back[1]["array"], array) and back[1]["static"] == static, (
        f"leaves that are not graph nodes come back unchanged: expected {array} and {static}, "
        f"got {back[1]['array']} and {back[1]['static']}"
    )
    problem = difference(snapshot(nnx, node), snapshot(nnx, back[0]))
    assert problem is None, f"the node from_tree gives back differs from node {problem}"


@pytest.mark.apis("NodeStates", "from_tree")
@given(data=st.data())
def test_node_states_hold_the_graphdef_and_state_of_their_node(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    graphdef, state = nnx.split(node)
    node_states = nnx.NodeStates.from_split(graphdef, state)
    assert node_states.graphdef == graphdef, "NodeStates.from_split(graphdef, state).graphdef is graphdef"
    assert len(node_states.states) == 1, (
        f"NodeStates.from_split with one State: expected 1 State, got {len(node_states.states)}"
    )
    problem = difference(state_snapshot(nnx, state), state_snapshot(nnx, node_states.state))
    assert problem is None, f"NodeStates.from_split(graphdef, state).state differs from state {problem}"
    problem = difference(snapshot(nnx, node), snapshot(nnx, nnx.from_tree(node_states)))
    assert problem is None, f"from_tree(NodeStates.from_split(*split(node))) differs from node {problem}"


@pytest.mark.apis("pure")
@pytest.mark.filterwarnings("ignore:This function is deprecated:DeprecationWarning")  # pure, in favour of as_pure
@given(data=st.data())
def test_pure_replaces_every_variable_with_its_value(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    variables = variables_by_path(nnx, node)
    tree = {"state": nnx.state(node), "loose": list(variables.values()), "static": "kept"}
    pure = nnx.pure(tree)
    assert pure["static"] == "kept", f"pure keeps a leaf that is no Variable: expected 'kept', got {pure['static']!r}"
    found = jax.tree.leaves(pure, is_leaf=lambda leaf: isinstance(leaf, nnx.Variable))
    assert not any(isinstance(leaf, nnx.Variable) for leaf in found), f"pure(tree) still holds Variables: {found}"
    expected = [np.asarray(variable[...]) for variable in variables.values()]
    got = [np.asarray(value) for value in pure["loose"]]
    assert len(got) == len(expected) and all(np.array_equal(a, b) for a, b in zip(got, expected)), (
        f"pure of a list of Variables: expected their values {expected}, got {got}"
    )
    for path, variable in variables.items():
        value = functools.reduce(lambda node, key: node[key], path, pure["state"])
        assert np.array_equal(np.asarray(value), np.asarray(variable[...])), (
            f"pure(state) at {path}: expected the value {np.asarray(variable[...])}, got {value!r}"
        )


@pytest.mark.kind("differential")
@pytest.mark.apis("to_tree", "NodeStates")
@pytest.mark.documented(None)
@pytest.mark.parametrize("prefix", [None, 0], ids=["no prefix", "a prefix"])
def test_node_states_keep_their_metadata_through_a_tree_map_as_in_flax(nnx: Any, flax_nnx: Any, prefix: Any) -> None:
    """A NodeStates is a pytree whose metadata (the prefix a split_fn gave it) survives jax.tree.map."""

    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        if prefix is None:
            tree = nnx.to_tree((model,))
        else:
            tree = nnx.to_tree(
                (model,),
                prefix=(prefix,),
                split_fn=lambda ctx, path, p, leaf: nnx.NodeStates.from_split(*ctx.split(leaf), metadata=p),
            )
        mapped = jax.tree.map(lambda x: x, tree)
        return mapped[0].metadata, mapped[0].graphdef == tree[0].graphdef, type(nnx.from_tree(mapped)[0]).__name__

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("differential")
@pytest.mark.apis("NodeStates")
@pytest.mark.documented(None)
@pytest.mark.parametrize("count", [0, 1, 2])
def test_node_states_state_needs_exactly_one_state_as_in_flax(nnx: Any, flax_nnx: Any, count: int) -> None:
    def scenario(nnx: Any) -> Any:
        graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
        return nnx.NodeStates(graphdef, (state,) * count, None).state

    assert_same(flax_nnx, nnx, scenario)
