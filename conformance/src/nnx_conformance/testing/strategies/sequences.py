"""Arguments of the sequence layers: MultiHeadAttention (self- and cross-attention, masks,
grouped heads, decoding), the recurrent cells and Bidirectional, with inputs they accept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

from .layers import LayerArgs, dtype_args, features, layer_input

ATTENTION_BATCH_SHAPES = ((2,), (1, 2), (2, 1, 1))
"""Batch axes of drawn attention inputs: inputs of rank 3 to 5."""

QUERY_LENGTH = 3
"""The number of query positions of a drawn attention input (one when decoding)."""


@dataclass(frozen=True)
class DecodingArgs(LayerArgs):
    """A MultiHeadAttention built with its autoregressive cache for inputs of ``cache_shape``
    in ``cache_dtype``, the dtype of its keys (``init_cache`` after construction); its input
    is one position."""

    cache_shape: tuple[int, ...] = ()
    cache_dtype: Any = jnp.float32

    def build(self, nnx: Any, layer: str, rngs: Any) -> Any:
        module = super().build(nnx, layer, rngs)
        module.init_cache(self.cache_shape, dtype=self.cache_dtype)
        return module


def _mask(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """A boolean attention mask of ``shape``, its batch and head axes of size 1 where the draw
    says (its query and key axes keep their sizes, as documented)."""
    kept = draw(st.lists(st.booleans(), min_size=len(shape) - 2, max_size=len(shape) - 2), label="mask axes kept")
    mask_shape = tuple(size if keep else 1 for size, keep in zip(shape, kept)) + shape[-2:]
    return np.random.default_rng(draw(st.integers(0, 3), label="mask seed")).integers(0, 4, mask_shape) > 0


@st.composite
def attention_args(draw: st.DrawFn) -> LayerArgs:
    """``MultiHeadAttention(num_heads, in_features, ...)`` with drawn head sizes, grouped
    key-value heads (``num_kv_heads``), output size, biases, qk-normalization, dropout
    (applied or not), dtypes and input rank; called for self-attention over 3 positions,
    for cross-attention over keys (and values) of another length and feature size, or
    decoding one position into a cache; with a mask broadcastable to the attention
    weights or none, and the weights sown or not (few sizes: an attention example
    compiles many operations)."""
    num_heads = draw(st.integers(1, 2), label="num_heads")
    in_features = num_heads * draw(st.sampled_from([1, 2]), label="in features per head")
    kwargs: dict[str, Any] = {
        "qkv_features": num_heads * draw(st.sampled_from([1, 2]), label="qkv features per head"),
        "out_features": draw(st.sampled_from([None, 3]), label="out_features"),
        "num_kv_heads": draw(st.sampled_from(sorted({None, 1, num_heads}, key=str)), label="num_kv_heads"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        "normalize_qk": draw(st.booleans(), label="normalize_qk"),
        "dropout_rate": draw(st.sampled_from([0.0, 0.5]), label="dropout_rate"),
        "deterministic": draw(st.booleans(), label="deterministic"),
        "broadcast_dropout": draw(st.booleans(), label="broadcast_dropout"),
        **draw(dtype_args()),
    }
    batch = draw(st.sampled_from(ATTENTION_BATCH_SHAPES), label="batch")
    call: dict[str, Any] = {"sow_weights": draw(st.booleans(), label="sow_weights")}
    form = draw(st.sampled_from(["self", "cross", "decode"]), label="attention form")
    if form == "decode":
        kwargs["decode"] = True
        cache_shape = batch + (QUERY_LENGTH, in_features)
        if draw(st.booleans(), label="mask given"):
            call["mask"] = _mask(draw, batch + (num_heads, 1, QUERY_LENGTH))
        cache_dtype = kwargs["dtype"] or jnp.float32  # float32 inputs promote any param_dtype to float32
        return DecodingArgs((num_heads, in_features), kwargs, batch + (1, in_features), call, cache_shape, cache_dtype)
    kwargs["decode"] = False
    kv_length = QUERY_LENGTH
    if form == "cross":
        kv_length = draw(st.sampled_from([1, 2]), label="key length")
        kv_features = draw(st.sampled_from([None, 1, 3]), label="in_kv_features")
        kwargs["in_kv_features"] = kv_features
        kv_shape = batch + (kv_length, kv_features or in_features)
        seed = draw(st.integers(0, 3), label="keys seed")
        call["inputs_k"] = layer_input(kv_shape, seed)
        if draw(st.booleans(), label="values given"):
            call["inputs_v"] = layer_input(kv_shape, seed + 1)
    if draw(st.booleans(), label="mask given"):
        call["mask"] = _mask(draw, batch + (num_heads, QUERY_LENGTH, kv_length))
    return LayerArgs((num_heads, in_features), kwargs, batch + (QUERY_LENGTH, in_features), call)


RECURRENT_CELLS = ("LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell")


@st.composite
def cell_args(draw: st.DrawFn) -> LayerArgs:
    """``<Cell>(in_features, hidden_features, dtypes)`` and a (batch, time, in_features) input."""
    in_features = draw(features, label="in_features")
    hidden = draw(features, label="hidden_features")
    length = draw(st.sampled_from([1, 3]), label="sequence length")
    return LayerArgs(
        (in_features, hidden), draw(dtype_args()), (draw(st.sampled_from([1, 2]), label="batch"), length, in_features)
    )


@dataclass(frozen=True)
class BidirectionalArgs(LayerArgs):
    """A Bidirectional over an RNN of each of ``cells`` (built with ``args``), with ``kwargs``
    for the Bidirectional itself."""

    cells: tuple[str, str] = ("GRUCell", "GRUCell")

    def build(self, nnx: Any, layer: str, rngs: Any) -> Any:
        forward, backward = (nnx.RNN(getattr(nnx, cell)(*self.args, rngs=rngs)) for cell in self.cells)
        return getattr(nnx, layer)(forward, backward, **self.keywords(nnx), rngs=rngs)


MERGES = (jnp.add, jnp.multiply)
"""``merge_fn`` drawn instead of Bidirectional's default concatenation."""


@st.composite
def bidirectional_args(draw: st.DrawFn) -> BidirectionalArgs:
    """``Bidirectional(RNN(cell), RNN(other cell), merge_fn=..., time_major=..., return_carry=...)``
    over float32 cells and a (batch, time, features) input, or (time, batch, features)."""
    cells = tuple(draw(st.lists(st.sampled_from(RECURRENT_CELLS), min_size=2, max_size=2), label="cells"))
    in_features, hidden = draw(features, label="in_features"), draw(features, label="hidden_features")
    time_major = draw(st.booleans(), label="time_major")
    options = {
        "time_major": time_major,
        "return_carry": draw(st.booleans(), label="return_carry"),
        **({"merge_fn": draw(st.sampled_from(MERGES), label="merge_fn")} if draw(st.booleans(), label="merge") else {}),
    }
    batch, length = draw(st.sampled_from([1, 2]), label="batch"), draw(st.sampled_from([1, 3]), label="length")
    shape = (length, batch, in_features) if time_major else (batch, length, in_features)
    return BidirectionalArgs((in_features, hidden), options, shape, {}, cells)
