"""The keywords of the transforms over named axes that the other tests leave at their
defaults: pmap's output axes, static and donated arguments and backend; vmap's
``spmd_axis_name``; shard_map's ``axis_names`` and ``check_vma``; and the
``transform_metadata`` with which vmap, scan and pmap name the axis they add to the
sharding of the Variables they create. Each drawn call runs on flax.nnx and the
implementation and is compared result for result and state for state, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms"), IN_GRAPH_MODE]


def _linear(nnx: Any, seed: int) -> Any:
    return nnx.Linear(3, 3, rngs=nnx.Rngs(seed))


@pytest.mark.apis("pmap")
@settings(max_examples=4)
@given(out_axes=st.sampled_from([0, 1]), scale=st.sampled_from([1, 2]), seed=strategies.seeds)
def test_pmap_output_axes_static_and_donated_arguments_act_as_in_flax(
    nnx: Any, flax_nnx: Any, out_axes: int, scale: int, seed: int
) -> None:
    x = strategies.layer_input((1, 2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any, scale: int) -> Any:
            return model(x) * scale

        mapped = nnx.pmap(
            step,
            in_axes=(None, 0, None),
            out_axes=out_axes,
            static_broadcasted_argnums=2,
            donate_argnums=1,
            backend="cpu",
            devices=jax.devices()[:1],
        )
        return mapped(model, jnp.array(x), scale), model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("vmap")
@settings(max_examples=3)
@given(seed=strategies.seeds)
def test_vmap_with_an_spmd_axis_name_acts_as_in_flax(nnx: Any, flax_nnx: Any, seed: int) -> None:
    x = strategies.layer_input((2, 4, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)
        mapped = nnx.vmap(lambda model, x: model(x), in_axes=(None, 0), spmd_axis_name="batch")
        return mapped(model, x), model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("shard_map")
@settings(max_examples=4)
@given(
    axis_names=st.sampled_from([frozenset(), frozenset({"devices"})]), check_vma=st.booleans(), seed=strategies.seeds
)
def test_shard_map_axis_names_and_vma_check_act_as_in_flax(
    nnx: Any, flax_nnx: Any, axis_names: frozenset[str], check_vma: bool, seed: int
) -> None:
    x = strategies.layer_input((2, 3), seed)
    mesh = jax.make_mesh((1,), ("devices",))

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any) -> Any:
            model.bias[...] += 1.0
            return model(x)

        mapped = nnx.shard_map(
            step,
            mesh=mesh,
            in_specs=(PartitionSpec(), PartitionSpec()),
            out_specs=PartitionSpec(),
            axis_names=axis_names,
            check_vma=check_vma,
        )
        return mapped(model, x), model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


def _sharded_param(nnx: Any, x: Any) -> Any:
    """A Param sharded along ``"model"`` by its metadata, without a mesh (no eager sharding)."""
    return nnx.Param(x, out_sharding=("model",), eager_sharding=False)


def _created_under(nnx: Any, transform: str, xs: Any, metadata: dict[str, Any]) -> Any:
    """A Param created under ``transform`` from each row of ``xs``, given ``transform_metadata``."""
    if transform == "vmap":
        return nnx.vmap(lambda x: _sharded_param(nnx, x), transform_metadata=metadata)(xs)
    if transform == "scan":

        def step(carry: Any, x: Any) -> tuple[Any, Any]:
            return carry, _sharded_param(nnx, x)

        return nnx.scan(step, transform_metadata=metadata)(jnp.zeros(()), xs)[1]
    return nnx.pmap(
        lambda x: _sharded_param(nnx, x), axis_name="layers", transform_metadata=metadata, devices=jax.devices()[:1]
    )(xs[:1])


@pytest.mark.apis("vmap", "scan", "pmap")
@pytest.mark.parametrize("transform", ["vmap", "scan", "pmap"])
@settings(max_examples=2)
@given(seed=strategies.seeds)
def test_transform_metadata_names_the_added_axis_as_in_flax(nnx: Any, flax_nnx: Any, transform: str, seed: int) -> None:
    xs = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        return _created_under(nnx, transform, xs, {nnx.PARTITION_NAME: "layers"})

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
