"""Laws of Modules and Pytrees as JAX pytrees (tree mode)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import NodeEntry, Snapshot, VariableEntry, snapshot, state_snapshot

pytestmark = pytest.mark.kind("property")


def expected_key_path(nnx: Any, shot: Snapshot, path: tuple[Any, ...]) -> str:
    """The documented key path of the Variable at ``path``: attributes as ``.name``,
    sequence items as ``[i]``, plain dict items as ``['k']``, then ``.value``."""
    parts = []
    for depth, part in enumerate(path):
        parent = shot[path[:depth]]
        assert isinstance(parent, NodeEntry), f"no node at {path[:depth]} in {shot}"
        if issubclass(parent.type, (tuple, list, nnx.List)):
            parts.append(f"[{part}]")
        elif parent.type is dict:
            parts.append(f"[{part!r}]")
        else:
            parts.append(f".{part}")
    return "".join(parts) + ".value"


@pytest.mark.apis("Module", "Pytree")
@given(data=st.data())
def test_jax_tree_unflatten_of_flatten_reproduces_a_module(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    leaves, treedef = jax.tree.flatten(node)
    rebuilt = jax.tree.unflatten(treedef, leaves)
    assert type(rebuilt) is type(node), f"unflatten returned a {type(rebuilt).__name__}, expected {type(node).__name__}"
    problem = difference(snapshot(nnx, node), snapshot(nnx, rebuilt))
    assert problem is None, f"jax.tree.unflatten(*flatten(module)) differs from the module {problem}"


@pytest.mark.apis("Module", "Pytree", "Variable")
@given(data=st.data())
def test_jax_tree_leaves_are_the_variable_values_in_sorted_attribute_order_with_documented_key_paths(
    nnx: Any, data: st.DataObject
) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    shot = snapshot(nnx, node)
    expected = [
        (expected_key_path(nnx, shot, path), entry.values)
        for path, entry in shot.items()
        if isinstance(entry, VariableEntry)
    ]
    actual = [
        (jax.tree_util.keystr(key_path), np.asarray(leaf).tolist())
        for key_path, leaf in jax.tree_util.tree_flatten_with_path(node)[0]
    ]
    assert actual == expected, f"jax.tree.flatten_with_path(module) gave {actual}, expected {expected}"


@pytest.mark.apis("Module", "Pytree")
@given(data=st.data())
def test_jax_tree_map_keeps_the_structure_and_maps_every_variable(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    mapped = jax.tree.map(lambda x: x * 2, node)
    before, after = snapshot(nnx, node), snapshot(nnx, mapped)
    doubled = {
        path: entry._replace(values=(np.asarray(entry.values) * 2).tolist())
        if isinstance(entry, VariableEntry)
        else entry
        for path, entry in before.items()
    }
    problem = difference(doubled, after)
    assert problem is None, f"jax.tree.map(lambda x: 2 * x, module) is not the module with doubled values {problem}"
    assert snapshot(nnx, node) == before, "jax.tree.map changed the module it mapped over"


@pytest.mark.apis("split")
@given(data=st.data())
def test_split_in_tree_mode_rejects_a_shared_variable(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    variable = data.draw(strategies.variables(nnx), label="shared variable")
    node.first, node.second = variable, variable
    with pytest.raises(ValueError, match=r"(?s)Duplicate .*found at paths"):
        nnx.split(node, graph=False)


@pytest.mark.apis("split", "state")
@given(data=st.data())
def test_tree_mode_and_graph_mode_give_the_same_state_for_a_tree(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="tree")
    graph_state, tree_state = nnx.state(node, graph=True), nnx.state(node, graph=False)
    problem = difference(state_snapshot(nnx, graph_state), state_snapshot(nnx, tree_state))
    assert problem is None, f"state(tree, graph=False) differs from state(tree, graph=True) {problem}"
