"""Differential tests of the checks of dot-product attention where it computes the weights
itself (dropout asked for, or weights to sow) rather than through JAX's fused attention:
dropout needs a key unless deterministic, and grouped-query attention needs the query heads
to be a multiple of the key heads and of the value heads; flax's error, message included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/attention")]


def _heads(count: int, length: int = 3) -> jax.Array:
    """A ``[batch, length, heads, depth]`` array with ``count`` heads."""
    return jax.random.normal(jax.random.key(count + length), (1, length, count, 2))


UNFUSED = {"dropout_rate": 0.1, "deterministic": True}
"""Keywords that keep dropout off yet take the path that computes the weights."""

CALLS: dict[str, tuple[Callable[[Any], Any], tuple[str, ...]]] = {
    "weights with dropout and no key": (
        lambda nnx: nnx.nn.attention.dot_product_attention_weights(
            _heads(2), _heads(2, 5), dropout_rate=0.5, deterministic=False
        ),
        ("dropout_rng",),
    ),
    "weights of 4 query heads over 3 key heads": (
        lambda nnx: nnx.nn.attention.dot_product_attention_weights(_heads(4), _heads(3, 5)),
        ("Key heads (3)",),
    ),
    "weights of 4 query heads over 2 key heads": (
        lambda nnx: nnx.nn.attention.dot_product_attention_weights(_heads(4), _heads(2, 5)),
        (),
    ),
    "attention of 4 query heads over 3 key and value heads": (
        lambda nnx: nnx.dot_product_attention(_heads(4), _heads(3, 5), _heads(3, 5), **UNFUSED),
        ("Key heads (3)",),
    ),
    "attention of 4 query heads over 2 key heads and 3 value heads": (
        lambda nnx: nnx.dot_product_attention(_heads(4), _heads(2, 5), _heads(3, 5), **UNFUSED),
        ("Value heads (3)",),
    ),
    "attention of 4 query heads over 2 key and value heads": (
        lambda nnx: nnx.dot_product_attention(_heads(4), _heads(2, 5), _heads(2, 5), **UNFUSED),
        (),
    ),
}


@pytest.mark.apis("dot_product_attention", "nn.attention.dot_product_attention_weights")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_unfused_attention_checks_its_heads_and_dropout_key_as_flax_does(nnx: Any, flax_nnx: Any, call: str) -> None:
    scenario, mentions = CALLS[call]
    assert_same(flax_nnx, nnx, scenario, mentions=mentions)
