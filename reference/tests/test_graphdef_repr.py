"""The reference's own layout of ``repr(GraphDef)``: flax prints its flat node table, which
the documentation never shows, so the conformance suite pins no GraphDef repr; this one
is the reference's, a tree of definitions with static values shown as they are."""

from __future__ import annotations

import jax.numpy as jnp

import nnx_reference as nnx


class Holder(nnx.Module):
    def __init__(self) -> None:
        self.w = nnx.Param(jnp.ones(2))
        self.items = nnx.List([nnx.BatchStat(jnp.zeros(1))])
        self.k = 3


EXPECTED = (
    "GraphDef(NodeDef(type=Holder, index=0, attributes={"
    "'items': NodeDef(type=List, index=1, attributes={0: VariableDef(type=BatchStat, index=2), "
    "'_length': Static(value=1)}), 'k': Static(value=3), 'w': VariableDef(type=Param, index=3)}), num_leaves=2)"
)


def test_a_graphdef_reprs_as_a_tree_of_its_definitions() -> None:
    graphdef, _ = nnx.split(Holder())
    assert repr(graphdef) == EXPECTED, f"expected {EXPECTED}\ngot {graphdef!r}"
