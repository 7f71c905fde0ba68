"""Differential tests of ``nnx.initializers``: from the same key, shape and dtype, every
initializer draws flax's values bit for bit (or raises flax's error)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/initializers")]

FACTORIES: dict[str, tuple[Any, ...]] = {
    "constant": (0.5,),
    "normal": (),
    "truncated_normal": (),
    "uniform": (),
    "orthogonal": (),
    "delta_orthogonal": (),
    "variance_scaling": (2.0, "fan_avg", "uniform"),
    **dict.fromkeys(
        (
            "glorot_normal",
            "glorot_uniform",
            "he_normal",
            "he_uniform",
            "kaiming_normal",
            "kaiming_uniform",
            "lecun_normal",
            "lecun_uniform",
            "xavier_normal",
            "xavier_uniform",
        ),
        (),
    ),
}
"""Initializer factories and the arguments that make one initializer of each."""

INITIALIZERS = ("ones", "zeros")
"""Initializers used as they are."""


@pytest.mark.apis("initializers")
@given(
    name=st.sampled_from(sorted(FACTORIES) + list(INITIALIZERS)),
    shape=st.sampled_from([(3,), (2, 3), (3, 3, 2), (3, 3, 2, 2)]),
    dtype=st.sampled_from(strategies.LAYER_DTYPES),
    seed=strategies.seeds,
)
def test_initializers_draw_the_values_of_flax(
    nnx: Any, flax_nnx: Any, name: str, shape: tuple[int, ...], dtype: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        found = getattr(nnx.initializers, name)
        initializer = found(*FACTORIES[name]) if name in FACTORIES else found
        return initializer(jax.random.key(seed), shape, dtype)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("initializers")
def test_ones_and_zeros_init_make_the_initializers_of_flax(nnx: Any, flax_nnx: Any) -> None:
    assert_same(
        flax_nnx,
        nnx,
        lambda nnx: [
            init()(jax.random.key(0), (2,), jnp.bfloat16)
            for init in (nnx.initializers.ones_init, nnx.initializers.zeros_init)
        ],
    )
