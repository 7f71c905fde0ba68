"""Differential tests of the transform prefixes: ``DiffState`` as ``grad``'s ``argnums``,
``nnx.prefix`` over a model, and ``StateSharding`` built from ``get_named_sharding`` as
``jit``'s shardings give flax's results."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms/prefixes")]

AXIS = "model"
FILTERS = ["Param", "BatchStat", "kernel", "bias", "everything"]
"""Filters drawn for DiffState and prefix, by name: a Variable type, a path part, or ``...``."""


def _filter(nnx: Any, name: str) -> Any:
    return {"Param": nnx.Param, "BatchStat": nnx.BatchStat, "everything": ...}.get(name) or nnx.PathContains(name)


def _model(nnx: Any, seed: int) -> Any:
    """A Linear followed by a BatchNorm."""
    rngs = nnx.Rngs(seed)
    return nnx.Sequential(nnx.Linear(3, 2, rngs=rngs), nnx.BatchNorm(2, rngs=rngs))


@pytest.mark.apis("DiffState", "grad")
@given(seed=st.integers(0, 2**16), wrt=st.sampled_from(FILTERS), graph_updates=st.booleans(), has_aux=st.booleans())
def test_grad_over_a_diff_state_differentiates_what_its_filter_selects_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, wrt: str, graph_updates: bool, has_aux: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)

        def loss(model: Any, x: Any) -> Any:
            value = jnp.sum(model(x) ** 2)
            return (value, value * 2) if has_aux else value

        diff_state = nnx.DiffState(0, _filter(nnx, wrt))
        grads = nnx.grad(loss, argnums=diff_state, has_aux=has_aux, graph=True, graph_updates=graph_updates)(model, x)
        return (diff_state.argnum, grads, nnx.state(model))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("prefix")
@given(seed=st.integers(0, 2**16), selected=st.sampled_from(FILTERS), axis=st.integers(0, 1), graph=st.booleans())
def test_prefix_puts_each_filter_value_at_the_leaves_it_selects_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, selected: str, axis: int, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        prefixes = nnx.prefix(model, {_filter(nnx, selected): axis, ...: None}, graph=graph)
        return jax.tree.leaves(prefixes, is_leaf=lambda leaf: leaf is None), jax.tree.structure(prefixes).num_leaves

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.multi_device
@pytest.mark.graph_mode("graph")  # StateSharding prefixes need graph mode with graph updates
@pytest.mark.apis("StateSharding", "get_named_sharding")
@given(seed=st.integers(0, 2**16), kernel_axis=st.sampled_from([0, 1]), shard_bias=st.booleans())
def test_state_sharding_from_named_shardings_places_a_jitted_model_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, kernel_axis: int, shard_bias: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        devices = len(jax.devices())
        mesh = jax.sharding.Mesh(jax.devices(), (AXIS,))
        kernel_names = (AXIS, None) if kernel_axis == 0 else (None, AXIS)
        with nnx.use_eager_sharding(False):
            model = nnx.Linear(devices, 2 * devices, rngs=nnx.Rngs(seed),
                               kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_names),
                               bias_init=nnx.with_partitioning(nnx.initializers.normal(), (AXIS if shard_bias else None,)))
        named = nnx.get_named_sharding(nnx.state(model), mesh)
        specs = [(str(path), str(leaf.get_value().spec)) for path, leaf in nnx.to_flat_state(named)]
        shardings = nnx.StateSharding(named)
        forward = nnx.jit(lambda m, x: (m, m(x)), in_shardings=(shardings, NamedSharding(mesh, P())),
                          out_shardings=(shardings, NamedSharding(mesh, P())))
        _, y = forward(model, jnp.ones((2, devices)))
        placed = [str(getattr(model, name)[...].sharding.spec) for name in ("kernel", "bias")]
        return specs, placed, y

    assert_same(flax_nnx, nnx, scenario)
