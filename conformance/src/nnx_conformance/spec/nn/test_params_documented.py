"""Layer keywords whose effect the documentation states, checked on the implementation
alone: the docstrings say what the keyword is for, flax.nnx's behaviour aside."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given, settings

from nnx_conformance import strategies
from nnx_conformance.assertions import expected_got
from nnx_conformance.strategies.callables import Promotion

pytestmark = [pytest.mark.kind("property"), pytest.mark.area("nn/normalization")]


@pytest.mark.apis("WeightNorm")
@pytest.mark.documented("docstring of flax.nnx.WeightNorm, promote_dtype")
@settings(max_examples=3)
@given(input_seed=strategies.seeds)
def test_weight_norm_normalizes_the_weights_through_its_promote_dtype(nnx: Any, input_seed: int) -> None:
    promotion = Promotion(jnp.float32)
    layer = nnx.WeightNorm(nnx.Linear(3, 4, rngs=nnx.Rngs(1)), promote_dtype=promotion, rngs=nnx.Rngs(0))
    layer(strategies.layer_input((2, 3), input_seed))
    assert promotion.calls, expected_got("WeightNorm's promote_dtype after a call", "at least one call", "none")
