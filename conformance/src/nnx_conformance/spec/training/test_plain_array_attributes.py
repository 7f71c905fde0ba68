"""Parity with flax.nnx of an ``Optimizer`` whose ``wrt`` filter selects plain ``jax.Array``
attributes (no Variables): it updates them as flax's does, eagerly and under jit."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import optax
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("training/optimizer")]


def _weights_only(path: tuple[Any, ...], value: Any) -> bool:
    """A filter selecting the attributes named ``w``."""
    return path[-1] == "w"


def _plain_model(nnx: Any) -> Any:
    """A Module with a plain float array attribute ``w`` (the parameters) and a Param ``b`` (not trained)."""

    class Plain(nnx.Module):
        def __init__(self) -> None:
            self.w = jnp.arange(3.0)
            self.b = nnx.Param(jnp.ones(2))

    return Plain()


def _loss(model: Any) -> Any:
    return jnp.sum(model.w**2) + jnp.sum(model.b[...])


@pytest.mark.apis("Optimizer", "jit", "grad", "DiffState")
@pytest.mark.documented(None)
@pytest.mark.parametrize("jitted", [False, True], ids=["eagerly", "under jit"])
def test_an_optimizer_over_plain_array_attributes_updates_them_as_flax(nnx: Any, flax_nnx: Any, jitted: bool) -> None:
    def scenario(nnx: Any) -> Any:
        model = _plain_model(nnx)
        optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=_weights_only)

        def step(model: Any, optimizer: Any) -> Any:
            grads = nnx.grad(_loss, argnums=nnx.DiffState(0, _weights_only))(model)
            return optimizer.update(model, grads)

        run = nnx.jit(step) if jitted else step
        updates = [run(model, optimizer) for _ in range(2)]
        return updates, model.w, model.b[...], optimizer.step[...]

    assert_same(flax_nnx, nnx, scenario)
