"""Laws of the attention helpers, as their docstrings state them: ``make_attention_mask``
compares every query entry with every key entry into a ``[batch..., 1, len_q, len_kv]``
mask, ``make_causal_mask`` lets position ``i`` see the positions ``j <= i``, each with
``extra_batch_dims`` leading singleton axes; ``dot_product_attention_with_rope`` is
dot-product attention of the RoPE-rotated queries and keys, positions ``arange(seq_len)``.

RoPE rotates the pairs ``(x[..., i], x[..., i + d/2])`` by the angle ``position *
theta ** (-2i / d)`` (the half-split form of the RoFormer rotation, flax's convention)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_close

pytestmark = pytest.mark.kind("property")

PAIRWISE: dict[str, Callable[..., Any]] = {
    "multiply": jnp.multiply,
    "greater_equal": jnp.greater_equal,
    "equal": jnp.equal,
}
"""Broadcasting comparisons drawn as ``pairwise_fn``."""

MASK_DTYPES = (jnp.float32, jnp.int32, jnp.bool_)

BATCHES = st.sampled_from([(), (2,), (1, 2)])


def _assert_mask(what: str, got: Any, expected: np.ndarray, dtype: Any) -> None:
    __tracebackhide__ = True
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{what}: expected shape {expected.shape}, got {got.shape}"
    assert got.dtype == np.dtype(dtype), f"{what}: expected dtype {np.dtype(dtype)}, got {got.dtype}"
    assert np.array_equal(got, expected.astype(got.dtype)), f"{what}: expected {expected.tolist()}, got {got.tolist()}"


@pytest.mark.apis("make_attention_mask")
@given(
    batch=BATCHES,
    lengths=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    pairwise=st.sampled_from(sorted(PAIRWISE)),
    extra_batch_dims=st.integers(0, 2),
    dtype=st.sampled_from(MASK_DTYPES),
    seed=strategies.seeds,
)
def test_make_attention_mask_compares_every_query_entry_with_every_key_entry(
    nnx: Any,
    batch: tuple[int, ...],
    lengths: tuple[int, int],
    pairwise: str,
    extra_batch_dims: int,
    dtype: Any,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    query, key = (rng.integers(0, 3, (*batch, length)) for length in lengths)
    pairs = np.asarray(PAIRWISE[pairwise](query[..., :, None], key[..., None, :]))
    expected = pairs.reshape((1,) * extra_batch_dims + (*batch, 1, *lengths))
    got = nnx.make_attention_mask(
        query, key, pairwise_fn=PAIRWISE[pairwise], extra_batch_dims=extra_batch_dims, dtype=dtype
    )
    _assert_mask(
        f"make_attention_mask({query.tolist()}, {key.tolist()}, pairwise_fn={pairwise}, "
        f"extra_batch_dims={extra_batch_dims})",
        got,
        expected,
        dtype,
    )


@pytest.mark.apis("make_causal_mask")
@given(batch=BATCHES, length=st.integers(1, 5), extra_batch_dims=st.integers(0, 2), dtype=st.sampled_from(MASK_DTYPES))
def test_make_causal_mask_lets_each_position_see_itself_and_those_before(
    nnx: Any, batch: tuple[int, ...], length: int, extra_batch_dims: int, dtype: Any
) -> None:
    causal = np.tril(np.ones((length, length)))
    expected = np.broadcast_to(causal, (*batch, 1, length, length)).reshape(
        (1,) * extra_batch_dims + (*batch, 1, length, length)
    )
    got = nnx.make_causal_mask(np.zeros((*batch, length)), extra_batch_dims=extra_batch_dims, dtype=dtype)
    _assert_mask(
        f"make_causal_mask(x of {(*batch, length)}, extra_batch_dims={extra_batch_dims})", got, expected, dtype
    )


def rotated(x: np.ndarray, theta: float) -> np.ndarray:
    """RoPE of ``x`` of shape ``[batch..., seq_len, heads, d]`` at positions ``arange(seq_len)``."""
    half = x.shape[-1] // 2
    positions = np.arange(x.shape[-3], dtype=np.float64)
    angles = (positions[:, None] * theta ** (-2 * np.arange(half) / x.shape[-1]))[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate(
        [first * np.cos(angles) - second * np.sin(angles), second * np.cos(angles) + first * np.sin(angles)], -1
    )


def attention(query: np.ndarray, key: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Softmax of the query-key products over ``sqrt(head_dim)``, applied to the values."""
    logits = np.einsum("...qhd,...khd->...hqk", query, key) / np.sqrt(query.shape[-1])
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return np.einsum("...hqk,...khd->...qhd", weights / weights.sum(-1, keepdims=True), value)


@pytest.mark.apis("dot_product_attention_with_rope")
@pytest.mark.filterwarnings(
    "ignore:'.value' access is now deprecated"
)  # flax's RoPE reads its cached tables through .value
@given(
    batch=st.sampled_from([(2,), (1, 2)]),
    length=st.sampled_from([1, 4]),
    heads=st.integers(1, 2),
    head_dim=st.sampled_from([2, 8]),
    theta=st.sampled_from([10_000.0, 100.0]),
    cached=st.booleans(),
    seed=strategies.seeds,
)
def test_dot_product_attention_with_rope_attends_with_rotated_queries_and_keys(
    nnx: Any, batch: tuple[int, ...], length: int, heads: int, head_dim: int, theta: float, cached: bool, seed: int
) -> None:
    query, key, value = (strategies.layer_input((*batch, length, heads, head_dim), seed + i) for i in range(3))
    sizes = {"embedding_size": head_dim, "max_seq_len": 4} if cached else {}
    rope = nnx.RoPE(theta=theta, **sizes)
    got = nnx.dot_product_attention_with_rope(query, key, value, rope=rope)
    expected = attention(rotated(query.astype(np.float64), theta), rotated(key.astype(np.float64), theta), value)
    assert_close(
        f"dot_product_attention_with_rope(q, k, v, rope=RoPE(theta={theta}, {sizes})), the attention of the rotated "
        f"q and k",
        got,
        expected,
        rtol=1e-5,
        atol=1e-5,
    )
