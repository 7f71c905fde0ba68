"""Differential tests of pooling: avg_pool, max_pool, min_pool and pool give flax's values
and gradients, bit for bit, over window shapes, strides, paddings and batch ranks, and
refuse explicit padding entries that are no pairs as flax does."""

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

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/pooling")]

POOLS = ("avg_pool", "max_pool", "min_pool", "pool")


@st.composite
def pooling_args(draw: st.DrawFn) -> tuple[tuple[int, ...], dict[str, Any]]:
    """An input shape (batch..., spatial..., features) and the keywords of one pooling call."""
    rank = draw(st.integers(1, 2), label="spatial rank")
    window = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank), label="window_shape"))
    keywords: dict[str, Any] = {"window_shape": window}
    if draw(st.booleans(), label="strides given"):
        keywords["strides"] = tuple(draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank), label="strides"))
    keywords["padding"] = draw(st.sampled_from(["VALID", "SAME", ((1, 0),) * rank]), label="padding")
    batch = draw(st.sampled_from([(), (2,), (1, 2)]), label="batch")
    return batch + (4,) * rank + (3,), keywords


@pytest.mark.apis(*POOLS)
@given(
    pooling=st.sampled_from(POOLS),
    drawn=pooling_args(),
    count_include_pad=st.booleans(),
    dtype=st.sampled_from(strategies.LAYER_DTYPES),
    seed=strategies.seeds,
)
def test_pooling_values_and_gradients_equal_flax(
    nnx: Any,
    flax_nnx: Any,
    pooling: str,
    drawn: tuple[tuple[int, ...], dict[str, Any]],
    count_include_pad: bool,
    dtype: Any,
    seed: int,
) -> None:
    shape, keywords = drawn
    if pooling == "avg_pool":
        keywords = {**keywords, "count_include_pad": count_include_pad}
    x = jnp.asarray(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32), dtype)

    def scenario(nnx: Any) -> Any:
        if pooling == "pool":

            def fn(x: Any) -> Any:
                return nnx.pool(x, jnp.asarray(0, x.dtype), jax.lax.add, **keywords)
        else:

            def fn(x: Any) -> Any:
                return getattr(nnx, pooling)(x, **keywords)

        return fn(x), jax.grad(lambda x: jnp.sum(fn(x).astype(jnp.float32) ** 2))(x)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("error")
@pytest.mark.apis(*POOLS)
@pytest.mark.parametrize("pooling", POOLS)
@pytest.mark.parametrize(
    "padding", [((0, 0, 0), (0, 0)), ((0,), (0, 0)), ((0, 0), (1, 1, 1))], ids=["three", "one", "three-second"]
)
def test_explicit_padding_needs_a_pair_per_spatial_axis_as_in_flax(
    nnx: Any, flax_nnx: Any, pooling: str, padding: tuple
) -> None:
    """An entry of another length is refused as flax refuses it, before any padding."""

    def scenario(nnx: Any) -> Any:
        function = getattr(nnx, pooling)
        inputs = jnp.ones((1, 4, 4, 1))
        if pooling == "pool":
            return function(inputs, 0.0, jax.lax.add, (2, 2), None, padding)
        return function(inputs, (2, 2), padding=padding)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("must be length 2",))
    assert outcome.error is not None, f"flax refuses padding {padding}"
