"""Differential tests of the forms ``merge`` and ``unflatten`` take: GraphStates (their
mapping and pytree behaviour, and those merge refuses), a FlatState, a State or a dict of
arrays for unflatten, a bare Ref split on its own; and the small
objects of the graph API: UpdateContexts compare as one, a RefMap forgets a deleted object,
NodeStates without a GraphDef has none to give."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


def _linear(nnx: Any, seed: int = 0) -> Any:
    return nnx.Linear(2, 3, rngs=nnx.Rngs(seed))


def _graph_state_as_mapping(nnx: Any) -> Any:
    """A GraphState's items written, read, deleted and listed, then merged."""
    unpacked = nnx.unpack(_linear(nnx))
    unpacked["kernel"] = nnx.Param(jnp.ones((2, 3)))
    del unpacked["bias"]
    return "kernel" in unpacked, "bias" in unpacked, sorted(unpacked), len(unpacked), unpacked["kernel"]


def _graph_state_as_pytree(nnx: Any) -> Any:
    """A GraphState through jax.tree: its leaves' paths, and a map of it merged back."""
    unpacked = nnx.unpack(_linear(nnx))
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(unpacked)[0]]
    doubled = jax.tree.map(lambda x: x * 2, unpacked)
    return paths, type(doubled).__name__, nnx.merge(doubled)


def _graph_state_attribute_set(nnx: Any) -> Any:
    """An attribute set on a GraphState lands in its State."""
    unpacked = nnx.unpack(_linear(nnx))
    unpacked.extra = nnx.Param(jnp.zeros(1))
    return sorted(unpacked), unpacked["extra"]


def _merged_from_flat_state(nnx: Any) -> Any:
    graphdef, state = nnx.split(_linear(nnx))
    return nnx.merge(graphdef, nnx.to_flat_state(state))


def _unflattened(leaves: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """A scenario unflattening a Linear's GraphDef with ``leaves(nnx, state)``."""

    def scenario(nnx: Any) -> Any:
        graphdef, state = nnx.split(_linear(nnx))
        return nnx.unflatten(graphdef, leaves(nnx, state))

    return scenario


def _root_ref_round_trip(nnx: Any) -> Any:
    """A bare Ref split and merged on its own, in graph mode."""
    ref = jax.new_ref(jnp.arange(3.0))
    graphdef, state = nnx.split(ref, graph=True)
    merged = nnx.merge(graphdef, state)
    return merged is ref, merged[...]


def _leaf_flattened_without_paths(nnx: Any) -> Any:
    """A lone array flattened in graph mode without paths, and unflattened back."""
    graphdef, leaves = nnx.flatten(jnp.arange(2.0), with_paths=False, graph=True)
    return leaves, nnx.unflatten(graphdef, leaves)


def _applied_with_graph_given(nnx: Any) -> Any:
    """GraphDef.apply told which mode to split the Module in after the call."""
    graphdef, state = nnx.split(_linear(nnx))
    out, (new_graphdef, new_state) = graphdef.apply(state, graph=True)(jnp.ones((1, 2)))
    return out, new_graphdef == graphdef, new_state


def _update_contexts_compared(nnx: Any) -> Any:
    with nnx.update_context("first") as first, nnx.update_context("second") as second:
        return hash(first) == hash(second), first == second, first == "first"


def _ref_map_deletion(nnx: Any) -> Any:
    first, second = nnx.Param(1.0), nnx.Param(2.0)
    ref_map = nnx.graphlib.RefMap()
    ref_map[first], ref_map[second] = 0, 1
    del ref_map[first]
    return len(ref_map), first in ref_map, second in ref_map, ref_map[second]


FORMS: dict[str, Callable[[Any], Any]] = {
    "a GraphState used as a mapping": _graph_state_as_mapping,
    "a GraphState used as a pytree": _graph_state_as_pytree,
    "an attribute set on a GraphState": _graph_state_attribute_set,
    "merge of a GraphDef and a FlatState": _merged_from_flat_state,
    "unflatten of a State": _unflattened(lambda nnx, state: state),
    "unflatten of a nested dict of arrays": _unflattened(lambda nnx, state: nnx.to_pure_dict(state)),
    "a bare Ref split and merged": _root_ref_round_trip,
    "a lone array flattened without paths": _leaf_flattened_without_paths,
    "GraphDef.apply given graph=True": _applied_with_graph_given,
    "two UpdateContexts compared": _update_contexts_compared,
    "a RefMap after a deletion": _ref_map_deletion,
}


@pytest.mark.apis("merge", "unflatten", "unpack", "GraphState", "GraphDef", "UpdateContext", "graphlib.RefMap")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(FORMS))
def test_these_forms_of_the_graph_api_give_flax_results(nnx: Any, flax_nnx: Any, case: str) -> None:
    outcome = assert_same(flax_nnx, nnx, FORMS[case], what=case)
    assert outcome.error is None, f"flax takes {case}: {outcome.error!r}"


def _two_graph_states_of_other_graphdefs(nnx: Any) -> Any:
    return nnx.merge(nnx.unpack(_linear(nnx)), nnx.unpack(nnx.BatchNorm(2, rngs=nnx.Rngs(0))))


ERRORS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "merge of a GraphState and a State": (
        lambda nnx: nnx.merge(nnx.unpack(_linear(nnx)), nnx.state(_linear(nnx))),
        "GraphState",
    ),
    "a GraphState made of a GraphDef and a dict": (
        lambda nnx: nnx.GraphState(nnx.graphdef(_linear(nnx)), {"a": nnx.Param(jnp.ones(1))}),
        "State",
    ),
    "merge of GraphStates of two GraphDefs": (_two_graph_states_of_other_graphdefs, "GraphDef"),
    "merge of a GraphDef alone": (lambda nnx: nnx.merge(nnx.graphdef(_linear(nnx))), "state"),
    "unflatten of a tuple of leaves": (
        _unflattened(lambda nnx, state: tuple(leaf for _, leaf in nnx.to_flat_state(state))),
        "tuple",
    ),
    "the GraphDef of NodeStates made from states alone": (
        lambda nnx: nnx.NodeStates.from_states(nnx.state(_linear(nnx))).graphdef,
        "graphdef",
    ),
}


@pytest.mark.kind("error")
@pytest.mark.apis("merge", "unflatten", "GraphState", "NodeStates")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(ERRORS))
def test_these_misuses_of_the_graph_api_raise_flax_error(nnx: Any, flax_nnx: Any, case: str) -> None:
    scenario, mention = ERRORS[case]
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mention,), what=case)
    assert outcome.error is not None, f"flax refuses {case}"
