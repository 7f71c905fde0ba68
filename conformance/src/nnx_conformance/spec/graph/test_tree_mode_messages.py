"""Differential tests of what tree mode says when it refuses a graph that holds a Variable or
a Ref twice. The whole message is compared with flax's: the object, the paths as each
function writes them, and the options it offers. (A Module inside itself is not drawn:
flax 0.12.12's tree mode recurses without end on it.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]

CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "split": lambda nnx, node: nnx.split(node, graph=False),
    "state": lambda nnx, node: nnx.state(node, graph=False),
    "graphdef": lambda nnx, node: nnx.graphdef(node, graph=False),
    "iter_graph": lambda nnx, node: list(nnx.iter_graph(node, graph=False)),
    "recursive_map": lambda nnx, node: nnx.recursive_map(lambda path, value: value, node, graph=False),
}
"""The graph functions called in tree mode on the refused node."""

NODES: dict[str, Callable[[Any], Any]] = {
    "a Param in two dict entries": lambda nnx: (lambda p: {"a": {"x": p}, "b": [p]})(nnx.Param(jnp.ones(1))),
    "a Ref in two attributes": lambda nnx: (lambda r: nnx.Dict(a=r, b=r))(jax.new_ref(jnp.ones(1))),
}


@pytest.mark.apis(*CALLS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("node", sorted(NODES))
def test_tree_mode_refuses_a_graph_in_flax_s_words(nnx: Any, flax_nnx: Any, call: str, node: str) -> None:
    def message(n: Any) -> Any:
        try:
            CALLS[call](n, NODES[node](n))
        except ValueError as error:
            return str(error)
        return None

    outcome = assert_same(flax_nnx, nnx, message)
    assert "does not support shared references" in str(outcome.result), (
        f"flax's {call} refuses {node} in tree mode with a ValueError"
    )


def _opaque(nnx: Any, nested: bool) -> Any:
    """A Pytree made with ``pytree=False`` (no JAX pytree), as the node or inside one."""

    class Opaque(nnx.Pytree, pytree=False):
        pass

    return nnx.Dict(inner=nnx.List([Opaque()])) if nested else Opaque()


@pytest.mark.apis(*CALLS, "Pytree")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("nested", [False, True], ids=["at the root", "inside a Dict"])
def test_tree_mode_refuses_a_pytree_false_object_in_flax_s_words(
    nnx: Any, flax_nnx: Any, call: str, nested: bool
) -> None:
    """The message names where the object was found, when it is not the node itself."""

    def message(n: Any) -> Any:
        try:
            CALLS[call](n, _opaque(n, nested))
        except ValueError as error:
            return str(error)
        return None

    outcome = assert_same(flax_nnx, nnx, message)
    assert "pytree=False" in str(outcome.result), f"flax's {call} refuses a pytree=False object in tree mode"
