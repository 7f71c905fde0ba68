"""The keywords of to_tree and from_tree that the other tests leave at their defaults:
to_tree's ``split_fn``, ``prefix``, ``map_non_graph_nodes``, ``check_aliasing`` and
``ctxtag``; from_tree's ``merge_fn``, ``is_leaf``, ``is_node_leaf``, ``prefix``,
``map_non_graph_nodes``, ``ctxtag`` and ``is_inner``. Each drawn call runs on flax.nnx and
the implementation with functions that record how they were called (context type, key
path, prefix, leaf type) and is compared call for call, result for result and error
type for error type, with the state left in the objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph"), IN_GRAPH_MODE]

NO_PREFIX = object()
"""The prefix left out: to_tree and from_tree get no ``prefix`` keyword."""

PREFIXES = {
    "left out": NO_PREFIX,
    "None": None,
    "one for all": 0,
    "per entry, None inside": {"model": 1, "array": 2, "parts": [3, None]},
    "the kernel under another": {"model": 1, "array": 2, "parts": 3},
    "not a prefix": (1, 2),
}


def _tree(nnx: Any, seed: int) -> dict[str, Any]:
    """A model, an array, and a list holding the model's kernel (reached twice) and a scalar."""
    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), nnx.Dropout(0.5, rngs=nnx.Rngs(seed + 1)))
    array = jnp.asarray(strategies.layer_input((2,), seed))
    return {"model": model, "array": array, "parts": [model.layers[0].kernel, seed % 5]}


def _prefix(name: str) -> dict[str, Any]:
    prefix = PREFIXES[name]
    return {} if prefix is NO_PREFIX else {"prefix": prefix}


@dataclass
class Calls:
    """A ``split_fn`` and a ``merge_fn`` that record each call as (context type, key path,
    prefix, leaf type): the split keeps Params apart from the rest, the merge merges a
    NodeStates and tags any other leaf."""

    nnx: Any
    made: list[tuple[str, str, Any, str]] = field(default_factory=list)

    def _record(self, ctx: Any, path: Any, prefix: Any, leaf: Any) -> None:
        self.made.append((type(ctx).__name__, jax.tree_util.keystr(path), prefix, type(leaf).__name__))

    def split(self, ctx: Any, path: Any, prefix: Any, leaf: Any) -> Any:
        self._record(ctx, path, prefix, leaf)
        if isinstance(leaf, (self.nnx.Pytree, self.nnx.Variable)):
            return self.nnx.NodeStates.from_split(*ctx.split(leaf, self.nnx.Param, ...))
        return ("kept", leaf)

    def merge(self, ctx: Any, path: Any, prefix: Any, leaf: Any) -> Any:
        self._record(ctx, path, prefix, leaf)
        if isinstance(leaf, self.nnx.NodeStates):
            return ctx.merge(leaf.graphdef, *leaf.states)
        return ("merged", type(leaf).__name__)


@pytest.mark.apis("to_tree", "from_tree", "NodeStates")
@pytest.mark.parametrize("prefix", PREFIXES, ids=list(PREFIXES))
@settings(max_examples=4)
@given(map_non_graph_nodes=st.booleans(), check_aliasing=st.booleans(), seed=strategies.seeds)
def test_split_fn_and_merge_fn_get_each_leaf_with_its_path_and_prefix_as_in_flax(
    nnx: Any, flax_nnx: Any, prefix: str, map_non_graph_nodes: bool, check_aliasing: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        tree, calls = _tree(nnx, seed), Calls(nnx)
        flat = nnx.to_tree(
            tree,
            split_fn=calls.split,
            map_non_graph_nodes=map_non_graph_nodes,
            check_aliasing=check_aliasing,
            **_prefix(prefix),
        )
        split_calls, leaves = list(calls.made), jax.tree.leaves(flat)
        back = nnx.from_tree(flat, merge_fn=calls.merge, map_non_graph_nodes=map_non_graph_nodes, **_prefix(prefix))
        shared = back["parts"][0] is back["model"].layers[0].kernel
        return split_calls, leaves, calls.made[len(split_calls) :], back, shared, tree

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("to_tree", "from_tree", "NodeStates")
@pytest.mark.parametrize("prefix", PREFIXES, ids=list(PREFIXES))
@settings(max_examples=3)
@given(map_non_graph_nodes=st.booleans(), seed=strategies.seeds)
def test_the_default_split_and_merge_take_every_leaf_they_are_given_as_in_flax(
    nnx: Any, flax_nnx: Any, prefix: str, map_non_graph_nodes: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        tree = _tree(nnx, seed)
        flat = nnx.to_tree(tree, map_non_graph_nodes=map_non_graph_nodes, check_aliasing=False, **_prefix(prefix))
        kinds = jax.tree.map(lambda x: type(x).__name__, flat, is_leaf=lambda x: isinstance(x, nnx.NodeStates))
        back = nnx.from_tree(flat, map_non_graph_nodes=map_non_graph_nodes, **_prefix(prefix))
        return kinds, jax.tree.leaves(flat), back, back["parts"][0] is back["model"].layers[0].kernel

    assert_same(flax_nnx, nnx, scenario)


LEAF_TESTS = {
    "NodeStates": lambda nnx: lambda x: isinstance(x, nnx.NodeStates),
    "NodeStates and lists": lambda nnx: lambda x: isinstance(x, (nnx.NodeStates, list)),
    "nothing": lambda nnx: lambda x: False,
    "NodeStates with state": lambda nnx: lambda x: isinstance(x, nnx.NodeStates) and bool(jax.tree.leaves(x.states)),
}


@pytest.mark.apis("to_tree", "from_tree", "NodeStates")
@settings(max_examples=8)
@given(
    is_leaf=st.sampled_from(list(LEAF_TESTS)),
    is_node_leaf=st.sampled_from(list(LEAF_TESTS)),
    map_non_graph_nodes=st.booleans(),
    seed=strategies.seeds,
)
def test_from_tree_merges_the_leaves_is_node_leaf_picks_among_those_is_leaf_stops_at_as_in_flax(
    nnx: Any, flax_nnx: Any, is_leaf: str, is_node_leaf: str, map_non_graph_nodes: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        flat = nnx.to_tree(_tree(nnx, seed))
        calls = Calls(nnx)
        back = nnx.from_tree(
            flat,
            merge_fn=calls.merge,
            is_leaf=LEAF_TESTS[is_leaf](nnx),
            is_node_leaf=LEAF_TESTS[is_node_leaf](nnx),
            map_non_graph_nodes=map_non_graph_nodes,
        )
        is_object = lambda x: isinstance(x, (nnx.Pytree, nnx.Variable))  # noqa: E731
        kinds = jax.tree.map(lambda x: type(x).__name__, back, is_leaf=is_object)
        return calls.made, kinds

    assert_same(flax_nnx, nnx, scenario)


INNER = {"inner": True, "outer": False, "not said": None}


@pytest.mark.apis("to_tree", "from_tree", "update_context")
@pytest.mark.parametrize("is_inner", INNER, ids=list(INNER))
@settings(max_examples=3)
@given(in_context=st.booleans(), scale=st.integers(-3, 3), seed=strategies.seeds)
def test_to_tree_and_from_tree_with_a_ctxtag_carry_updates_back_to_the_outer_objects_as_in_flax(
    nnx: Any, flax_nnx: Any, is_inner: str, in_context: bool, scale: int, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        tree = _tree(nnx, seed)
        model, kernel = tree["model"], tree["parts"][0]
        outer_tree = (model, kernel)
        with nnx.update_context("tag") if in_context else nnx.update_context("other"):
            flat = nnx.to_tree(outer_tree, ctxtag="tag")
            inner = nnx.from_tree(flat, ctxtag="tag", is_inner=INNER[is_inner])
            inner[1][...] = inner[1][...] * scale
            inner[0].layers[0].extra = nnx.Param(jnp.full((1,), float(scale)))
            back = nnx.from_tree(nnx.to_tree(inner, ctxtag="tag"), ctxtag="tag", is_inner=False)
        identities = [back[0] is model, back[1] is kernel, inner[0] is model, back[1] is back[0].layers[0].kernel]
        return identities, back, model

    assert_same(flax_nnx, nnx, scenario)
