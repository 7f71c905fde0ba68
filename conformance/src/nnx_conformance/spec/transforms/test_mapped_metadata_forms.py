"""Parity of the mapped transforms' less common forms with flax.nnx: ``pmap``'s decorator
form, and the partition name that ``transform_metadata`` of ``vmap`` and ``scan``
removes from and adds back to the sharding metadata of the Variables a ``StateAxes``
maps, leaving the broadcast ones as they are."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("pmap")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_pmap_as_a_decorator_with_options_acts_as_in_flax(nnx: Any, flax_nnx: Any, graph: bool) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.pmap(axis_name="i", in_axes=(0, None), graph=graph)
        def scaled(x: Any, k: Any) -> Any:
            return x * k

        return scaled(jnp.ones((1, 3)), jnp.arange(3.0))

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax's pmap takes its options first: {outcome.error!r}"


def _stacked(nnx: Any) -> Any:
    """A Module whose Param is stacked on a 'layers' axis and whose BatchStat is not."""
    with nnx.use_eager_sharding(False):
        return nnx.Dict(
            w=nnx.Param(jnp.arange(6.0).reshape(2, 3), out_sharding=("layers", "model")),
            b=nnx.BatchStat(jnp.ones(3), out_sharding=("model",)),
        )


@pytest.mark.apis("vmap", "scan", "StateAxes")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["vmap", "scan"])
def test_transform_metadata_moves_the_partition_name_of_the_state_axes_variables_as_flax(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _stacked(nnx)
        seen: list[Any] = []

        def step(model: Any) -> Any:
            seen.append({k: model[k].get_metadata().get("out_sharding") for k in ("w", "b")})
            model["w"][...] += model["b"][...]
            return jnp.sum(model["w"][...])

        axes = nnx.StateAxes({nnx.Param: 0, ...: None})
        # StateAxes need graph mode with graph updates
        options = {"transform_metadata": {nnx.PARTITION_NAME: "layers"}, "graph": True, "graph_updates": True}
        if transform == "vmap":
            out = nnx.vmap(step, in_axes=(axes,), **options)(model)
        else:
            out = nnx.scan(step, in_axes=(axes,), out_axes=0, **options)(model)
        return out, seen, model

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax's {transform} maps the StateAxes' Variables: {outcome.error!r}"
