"""Parity of the attribute order that a call of ``nnx.jit`` with graph updates leaves on a
Module with flax.nnx: flax rebuilds the caller's graph from the call's output, which puts
a Module's attributes in sorted order, whether or not the function updated anything."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("updates", [False, True], ids=["reading", "updating"])
@pytest.mark.parametrize("calls", [1, 3], ids=["one call", "calls adding an attribute between them"])
def test_a_jit_call_with_graph_updates_leaves_the_attributes_in_flax_s_order(
    nnx: Any, flax_nnx: Any, updates: bool, calls: int
) -> None:
    def scenario(nnx: Any) -> Any:
        inner = nnx.Dict(z=nnx.Param(jnp.ones(2)), a=nnx.BatchStat(jnp.zeros(2)))
        model = nnx.Dict(w=nnx.Param(jnp.arange(3.0)), count=nnx.BatchStat(jnp.array(0)), inner=inner)

        def step(model: Any) -> Any:
            if updates:
                model["count"][...] += 1
            return model["w"][...]

        jitted = nnx.jit(step, graph=True, graph_updates=True)
        orders = []
        for i in range(calls):
            jitted(model)
            orders.append((list(model.keys()), list(model["inner"].keys())))
            model[f"x{calls - i}"] = nnx.Param(jnp.ones(1))  # the next call finds it last
        return orders

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
