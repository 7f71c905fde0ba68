"""The attention keywords that the other tests leave at their defaults: MultiHeadAttention's
key/value input size, precision, initializers, metadata, custom ``promote_dtype`` and
``dot_general`` functions or classes (called as flax calls them); the attention functions'
precision, promotion and passed-on keywords; the mask helpers' extra batch axes
and dtype. Each case runs on flax.nnx and the implementation from drawn seeds and is
compared result for result, state for state and gradient for gradient, bit for bit."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import (
    HIGHEST,
    NORMAL,
    OptionCase,
    Promotion,
    assert_runs_as_in_flax,
    dot_general_class,
    scaled_dot_general,
)

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/attention")]


def _cross(nnx: Any, layer: Any, x: Any) -> Any:
    """Attention from ``x`` to keys and values of six features (its first six)."""
    return layer(x, x[..., :6])


CASES = (
    OptionCase(
        "MultiHeadAttention over keys of another size, initialized, with metadata",
        "MultiHeadAttention",
        (2, 8, 8, 8, None, 6),
        lambda nnx: {
            "decode": False,
            "precision": HIGHEST,
            "out_kernel_init": NORMAL,
            "bias_init": NORMAL,
            "normalize_qk": True,
            "out_kernel_metadata": {"o": 1},
            "bias_metadata": {"b": 2},
            "key_ln_scale_metadata": {"k": 3},
        },
        (2, 5, 8),
        call=_cross,
    ),
    OptionCase(
        "MultiHeadAttention with its own promotions and dot_generals",
        "MultiHeadAttention",
        (2, 8),
        lambda nnx: {
            "decode": False,
            "normalize_qk": True,
            "qkv_promote_dtype": Promotion(jnp.float32),
            "out_promote_dtype": Promotion(jnp.bfloat16),
            "ln_promote_dtype": Promotion(jnp.float32),
            "qkv_dot_general": scaled_dot_general(),
            "out_dot_general": scaled_dot_general(),
        },
        (2, 5, 8),
    ),
    OptionCase(
        "MultiHeadAttention with dot_general classes",
        "MultiHeadAttention",
        (2, 8),
        lambda nnx: {
            "decode": False,
            "qkv_dot_general_cls": dot_general_class(),
            "out_dot_general_cls": dot_general_class(),
        },
        (2, 5, 8),
    ),
)


@pytest.mark.apis("MultiHeadAttention")
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@settings(max_examples=3)
@given(seed=strategies.seeds, input_seed=strategies.seeds)
def test_an_attention_keyword_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, case: OptionCase, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(case.input_shape, input_seed)
    assert_runs_as_in_flax(flax_nnx, nnx, case.scenario(seed, x))


def _qkv(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query, key and value of shape (batch 2, length 3, heads 2, features 4)."""
    return tuple(strategies.layer_input((2, 3, 2, 4), seed + i) for i in range(3))  # type: ignore[return-value]


@pytest.mark.apis("dot_product_attention")
@settings(max_examples=4)
@given(
    precision=st.sampled_from([HIGHEST, "float32"]),
    to=st.sampled_from([jnp.bfloat16, jnp.float16]),
    seed=strategies.seeds,
)
def test_dot_product_attention_precision_and_promotion_act_as_in_flax(
    nnx: Any, flax_nnx: Any, precision: Any, to: Any, seed: int
) -> None:
    query, key, value = _qkv(seed)

    def scenario(nnx: Any) -> Any:
        promotion = Promotion(to)
        return nnx.dot_product_attention(query, key, value, precision=precision, promote_dtype=promotion), promotion

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("dot_product_attention_with_rope", "RoPE")
@settings(max_examples=4)
@given(causal=st.booleans(), seed=strategies.seeds)
def test_rope_attention_passes_its_keywords_on_as_flax_does(nnx: Any, flax_nnx: Any, causal: bool, seed: int) -> None:
    query, key, value = _qkv(seed)

    def scenario(nnx: Any) -> Any:
        return nnx.dot_product_attention_with_rope(
            query, key, value, rope=nnx.RoPE(), is_causal=causal, precision=HIGHEST
        )

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("make_attention_mask")
@settings(max_examples=4)
@given(extra=st.integers(1, 2), dtype=st.sampled_from([jnp.bool_, jnp.int32, jnp.bfloat16]), seed=strategies.seeds)
def test_attention_masks_with_extra_batch_axes_and_dtype_are_flax_s(
    nnx: Any, flax_nnx: Any, extra: int, dtype: Any, seed: int
) -> None:
    rows = np.random.default_rng(seed).integers(0, 2, (2, 3))

    def scenario(nnx: Any) -> Any:
        return nnx.make_attention_mask(rows > 0, rows[:, :2] > 0, extra_batch_dims=extra, dtype=dtype)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
