"""Differential tests of the attention functions: masks and dot-product attention give
flax's values and gradients, bit for bit, over input ranks 3 to 5, with and without
dropout, masks, bias, causality and grouped key/value heads."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/attention")]


@pytest.mark.apis("make_attention_mask", "make_causal_mask", "combine_masks")
@given(
    batch=st.sampled_from([(), (2,), (1, 2)]),
    lengths=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    extra_batch_dims=st.integers(0, 1),
    dtype=st.sampled_from([jnp.float32, jnp.bool_, jnp.int32]),
    seed=strategies.seeds,
)
def test_masks_are_those_of_flax(
    nnx: Any,
    flax_nnx: Any,
    batch: tuple[int, ...],
    lengths: tuple[int, int],
    extra_batch_dims: int,
    dtype: Any,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    query, key = (rng.integers(0, 3, batch + (n,)) for n in lengths)

    def scenario(nnx: Any) -> Any:
        padding = nnx.make_attention_mask(query > 0, key > 0, extra_batch_dims=extra_batch_dims, dtype=dtype)
        pairs = nnx.make_attention_mask(query, key, pairwise_fn=jnp.greater_equal, dtype=dtype)
        causal = nnx.make_causal_mask(query, extra_batch_dims=extra_batch_dims, dtype=dtype)
        square = nnx.make_attention_mask(query > 0, query > 0, dtype=dtype)
        return padding, pairs, causal, nnx.combine_masks(square, None, causal, dtype=dtype), nnx.combine_masks(None)

    assert_same(flax_nnx, nnx, scenario)


@st.composite
def attention_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Query, key, value (``[batch..., length, heads, depth]``, rank 3 to 5) and the
    keywords of one ``dot_product_attention`` call."""
    batch = draw(st.sampled_from([(), (2,), (1, 2)]), label="batch")
    heads, kv_heads = draw(st.sampled_from([(2, 2), (2, 1), (1, 1)]), label="query and key/value heads")
    q_len, kv_len = draw(st.sampled_from([(3, 3), (2, 3)]), label="query and key lengths")
    seed = draw(strategies.seeds, label="input seed")
    rng = np.random.default_rng(seed)
    shapes = {
        "query": batch + (q_len, heads, 4),
        "key": batch + (kv_len, kv_heads, 4),
        "value": batch + (kv_len, kv_heads, 4),
    }
    drawn: dict[str, Any] = {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in shapes.items()}
    logits_shape = batch + (heads, q_len, kv_len)
    if draw(st.booleans(), label="mask"):
        drawn["mask"] = rng.integers(0, 4, logits_shape) > 0
    if draw(st.booleans(), label="bias"):
        drawn["bias"] = rng.standard_normal(logits_shape, dtype=np.float32)
    drawn["is_causal"] = q_len == kv_len and draw(st.booleans(), label="is_causal")
    drawn["dropout_rate"] = draw(st.sampled_from([0.0, 0.5]), label="dropout_rate")
    drawn["deterministic"] = draw(st.booleans(), label="deterministic")
    drawn["broadcast_dropout"] = draw(st.booleans(), label="broadcast_dropout")
    drawn["dtype"] = draw(st.sampled_from(strategies.NORM_DTYPES), label="dtype")
    return drawn


@pytest.mark.apis("dot_product_attention")
@given(inputs=attention_inputs(), seed=strategies.seeds)
def test_dot_product_attention_values_and_gradients_equal_flax(
    nnx: Any, flax_nnx: Any, inputs: dict[str, Any], seed: int
) -> None:
    arrays = {name: inputs[name] for name in ("query", "key", "value")}
    keywords = {name: value for name, value in inputs.items() if name not in arrays}

    def scenario(nnx: Any) -> Any:
        def attend(query: Any, key: Any, value: Any) -> Any:
            return nnx.dot_product_attention(query, key, value, dropout_rng=jax.random.key(seed), **keywords)

        def loss(*args: Any) -> Any:
            return jnp.sum(attend(*args).astype(jnp.float32) ** 2)

        return attend(**arrays), jax.grad(loss, argnums=(0, 1, 2))(*arrays.values())

    assert_same(flax_nnx, nnx, scenario)
