"""Keywords whose effect the documentation states, checked on the implementation alone:
the docstrings say what the keyword is for, flax.nnx's behaviour aside (WeightNorm's
``promote_dtype``; GroupNorm's ``reduction_axes``; dot_product_attention_with_rope's ``input_positions``, of shape
``(..., seq_len)``)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import expected_got
from nnx_conformance.testing.strategies.callables import Promotion

pytestmark = [pytest.mark.kind("property")]


@pytest.mark.area("nn/normalization")
@pytest.mark.apis("WeightNorm")
@pytest.mark.documented("docstring of flax.nnx.WeightNorm, promote_dtype")
@settings(max_examples=3)
@given(input_seed=strategies.seeds)
def test_weight_norm_normalizes_the_weights_through_its_promote_dtype(nnx: Any, input_seed: int) -> None:
    promotion = Promotion(jnp.float32)
    layer = nnx.WeightNorm(nnx.Linear(3, 4, rngs=nnx.Rngs(1)), promote_dtype=promotion, rngs=nnx.Rngs(0))
    layer(strategies.layer_input((2, 3), input_seed))
    assert promotion.calls, expected_got("WeightNorm's promote_dtype after a call", "at least one call", "none")


def _heads_first(a: Any) -> Any:
    """(batch, length, heads, features) to (batch, heads, length, features), and back."""
    return jnp.swapaxes(a, -2, -3)


@pytest.mark.area("nn/attention")
@pytest.mark.apis("dot_product_attention_with_rope", "RoPE", "dot_product_attention")
@pytest.mark.documented("docstring of flax.nnx.dot_product_attention_with_rope, input_positions")
@settings(max_examples=3)
@given(
    input_seed=strategies.seeds,
    positions=st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3), min_size=2, max_size=2),
)
def test_rope_attention_rotates_queries_and_keys_at_the_given_positions(
    nnx: Any, input_seed: int, positions: list[list[int]]
) -> None:
    query, key, value = (strategies.layer_input((2, 3, 2, 4), input_seed + i) for i in range(3))
    at = jnp.asarray(positions)
    rope = nnx.RoPE()
    got = nnx.dot_product_attention_with_rope(query, key, value, rope=rope, input_positions=at)

    def rotated(a: Any) -> Any:
        return _heads_first(rope(_heads_first(a), input_positions=at[:, None, :]))

    want = nnx.dot_product_attention(rotated(query), rotated(key), value)
    assert np.array_equal(got, want), expected_got(
        f"attention with RoPE at positions {positions}",
        "attention of the queries and keys RoPE rotates there",
        f"a difference of {float(jnp.max(jnp.abs(got - want))):.3g}",
    )


@pytest.mark.area("nn/normalization")
@pytest.mark.apis("GroupNorm")
@pytest.mark.documented("docstring of flax.nnx.GroupNorm, reduction_axes")
@settings(max_examples=3)
@given(input_seed=strategies.seeds, num_groups=st.sampled_from([1, 2, 4]))
def test_group_norm_takes_its_statistics_per_group_over_the_reduction_axes_it_is_given(
    nnx: Any, input_seed: int, num_groups: int
) -> None:
    """With ``reduction_axes=(-1,)`` each position of each example is normalized on its own,
    group by group: the statistics of a group of channels over the axes given, nothing else."""
    x = np.random.default_rng(input_seed).standard_normal((2, 3, 4)).astype(np.float32)
    layer = nnx.GroupNorm(4, num_groups=num_groups, reduction_axes=(-1,), use_fast_variance=False, rngs=nnx.Rngs(0))
    grouped = x.reshape(2, 3, num_groups, 4 // num_groups)
    mean, var = grouped.mean(-1, keepdims=True), grouped.var(-1, keepdims=True)
    expected = ((grouped - mean) / np.sqrt(var + layer.epsilon)).reshape(x.shape)
    got = np.asarray(layer(jnp.asarray(x)))
    assert np.allclose(got, expected, atol=1e-4), expected_got(
        f"GroupNorm({num_groups} groups, reduction_axes=(-1,)) of a (2, 3, 4) input", expected.round(4), got.round(4)
    )
