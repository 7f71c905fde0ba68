"""Error messages of the reference that say more than flax's: flax raises the same
class (the conformance suite checks that); these name what went wrong in the reference's
own words."""

from __future__ import annotations

import jax.numpy as jnp
import optax
import pytest

import nnx_reference as nnx

SHAPES = {"kernel": (2, 3), "bias": (3,), "extra": (3,)}


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        (("kernel",), r"missing from grads: \['bias'\]; unexpected in grads: none$"),
        (("bias", "kernel", "extra"), r"missing from grads: none; unexpected in grads: \['extra'\]$"),
    ],
    ids=["a missing gradient", "an unexpected gradient"],
)
def test_optimizer_update_names_the_paths_where_grads_and_params_differ(keys: tuple[str, ...], named: str) -> None:
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    grads = nnx.State({key: nnx.Param(jnp.ones(SHAPES[key])) for key in keys})
    with pytest.raises(ValueError, match=named):
        optimizer.update(model, grads)
