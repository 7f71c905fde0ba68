"""Parity of the forms ``in_axes`` may take with flax.nnx: a tuple with one entry per
argument, or one entry for all; a list is refused (JAX's prefix error: a list is no
prefix of the arguments' tuple) by every mapped transform, and a ``StateAxes`` outside a
tuple by ``vmap`` (``TypeError``) and ``pmap`` (``ValueError``); an empty ``StateAxes`` in
``out_axes`` gives a returned Module's Variables no axis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _stacked(nnx: Any) -> Any:
    @nnx.split_rngs(splits=1)
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs: Any) -> Any:
        return nnx.Linear(2, 2, rngs=rngs)

    return create(nnx.Rngs(0))


LISTS: dict[str, Callable[[Any, bool], Any]] = {
    "vmap": lambda nnx, graph: nnx.vmap(lambda x: x * 2, in_axes=[0], graph=graph)(jnp.ones((1, 3))),
    "pmap": lambda nnx, graph: nnx.pmap(lambda x: x * 2, in_axes=[0], graph=graph)(jnp.ones((1, 3))),
    "scan": lambda nnx, graph: nnx.scan(
        lambda c, x: (c, x), in_axes=[nnx.Carry, 0], out_axes=(nnx.Carry, 0), graph=graph
    )(0.0, jnp.ones((2, 3))),
    "transform_metadata": lambda nnx, graph: nnx.transform_metadata(
        lambda x: x, in_axes=[0], out_axes=0, partition=None, graph=graph
    )(jnp.ones((2, 3))),
}


@pytest.mark.apis(*LISTS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("transform", sorted(LISTS))
def test_in_axes_given_as_a_list_is_refused_as_by_flax(nnx: Any, flax_nnx: Any, transform: str, graph: bool) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: LISTS[transform](nnx, graph))
    assert outcome.error is not None, f"flax's {transform} refuses a list in_axes"


@pytest.mark.apis("vmap", "pmap", "StateAxes")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("transform", ["vmap", "pmap"])
def test_a_state_axes_outside_a_tuple_is_refused_as_by_flax(
    nnx: Any, flax_nnx: Any, transform: str, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        mapped = getattr(nnx, transform)(lambda m: m(jnp.ones(2)), in_axes=nnx.StateAxes({...: 0}), graph=graph)
        return mapped(_stacked(nnx))

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is not None, f"flax's {transform} refuses a StateAxes outside a tuple"


@pytest.mark.graph_mode("graph")  # StateAxes need graph mode with graph updates; tree mode refuses them first
@pytest.mark.apis("vmap", "StateAxes")
@pytest.mark.documented(None)
def test_an_empty_state_axes_in_out_axes_gives_no_axis_to_a_returned_module(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        create = nnx.vmap(lambda x: nnx.Linear(2, 2, rngs=nnx.Rngs(0)), in_axes=0, out_axes=nnx.StateAxes({}))
        return create(jnp.ones((2, 3)))

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("No axis found",))
    assert outcome.error is not None, "flax's vmap finds no axis for the returned Module's Variables"
