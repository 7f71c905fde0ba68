"""Dot-product attention, attention masks, rotary position embeddings and multi-head attention."""

from __future__ import annotations

import functools
import typing as tp

import jax
import jax.numpy as jnp
from jax import lax

from ..module import Module
from ..pytreelib import data
from ..variablelib import Cache, Intermediate, Variable
from . import dtypes, initializers
from .aliases import NO_METADATA, Array, Dtype, Metadata, Shape
from .flags import first_from
from .initializers import Initializer
from .linear import LinearGeneral, default_kernel_init
from .normalization import LayerNorm
from .stochastic import draw_key, fork_stream

__all__ = [
    "MultiHeadAttention",
    "RoPE",
    "combine_masks",
    "dot_product_attention",
    "dot_product_attention_weights",
    "dot_product_attention_with_rope",
    "make_attention_mask",
    "make_causal_mask",
]


def _causal_mask(q_len: int, k_len: int) -> Array:
    return jnp.tril(jnp.ones((q_len, k_len), dtype=jnp.bool_))


def _logits(query: Array, key: Array, precision: tp.Any) -> Array:
    """``[batch..., heads, q_length, kv_length]`` query-key products; with fewer key heads,
    each key head serves its group of query heads (the query is viewed as groups)."""
    q_heads, kv_heads = query.shape[-2], key.shape[-2]
    if q_heads == kv_heads:
        return jnp.einsum("...qhd,...khd->...hqk", query, key, precision=precision)
    grouped = jnp.reshape(query, (*query.shape[:-2], kv_heads, q_heads // kv_heads, query.shape[-1]))
    logits = jnp.einsum("...qhgd,...khgd->...hgqk", grouped, jnp.expand_dims(key, -2), precision=precision)
    return jnp.reshape(logits, (*logits.shape[:-4], q_heads, *logits.shape[-2:]))


def _weighted_values(weights: Array, value: Array, precision: tp.Any) -> Array:
    """``[batch..., q_length, heads, depth]``: the values averaged by ``weights``, grouped
    as :func:`_logits` groups the heads."""
    q_heads, kv_heads = weights.shape[-3], value.shape[-2]
    if q_heads == kv_heads:
        return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)
    grouped = jnp.reshape(weights, (*weights.shape[:-3], kv_heads, q_heads // kv_heads, *weights.shape[-2:]))
    out = jnp.einsum("...hgqk,...khgd->...qhgd", grouped, jnp.expand_dims(value, -2), precision=precision)
    return jnp.reshape(out, (*out.shape[:-3], q_heads, out.shape[-1]))


def dot_product_attention_weights(
    query: Array,
    key: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Array | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: tp.Any = None,
    module: Module | None = None,
    promote_dtype: tp.Callable = dtypes.promote_dtype,
    is_causal: bool = False,
):
    """Softmax attention weights ``[batch..., heads, q_length, kv_length]`` for query and key."""
    _check_dropout_rate(dropout_rate)
    if not deterministic and dropout_rate > 0.0 and dropout_rng is None:
        raise ValueError("dropout_rng is required when dropout_rate > 0 and deterministic=False.")
    query, key = promote_dtype((query, key), dtype=dtype)
    dtype = query.dtype
    if query.ndim != key.ndim:
        raise ValueError(f"q, k must have same rank, but got {query.ndim}, {key.ndim}.")
    if query.shape[:-3] != key.shape[:-3]:
        raise ValueError(f"q, k batch dims must match, but got shapes {query.shape}, {key.shape}.")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"q, k depths must match, but got {query.shape[-1]} and {key.shape[-1]}.")
    _check_groups(query.shape[-2], key.shape[-2], "Key", " for Grouped Query Attention.")
    query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
    weights = _logits(query, key, precision)
    if bias is not None:
        weights = weights + bias
    if is_causal:
        causal = _causal_mask(weights.shape[-2], weights.shape[-1])
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    if mask is not None:
        weights = jnp.where(mask, weights, jnp.finfo(dtype).min)
    weights = jax.nn.softmax(weights).astype(dtype)
    if module is not None:
        module.sow(Intermediate, "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            shape = (1,) * (key.ndim - 2) + weights.shape[-2:]
        else:
            shape = weights.shape
        keep = jax.random.bernoulli(dropout_rng, keep_prob, shape)
        weights = weights * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return weights


def _check_dropout_rate(dropout_rate: float) -> None:
    """Raises flax's ValueError for a rate outside ``[0, 1)``, dropout or not."""
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"dropout_rate must be in the range [0, 1), got {dropout_rate!r}.")


def _check_groups(q_heads: int, heads: int, kind: str, suffix: str = "") -> None:
    """Raises flax's ValueError unless the query heads are a multiple of the ``kind`` heads."""
    if q_heads % heads != 0:
        raise ValueError(f"Query heads ({q_heads}) must be multiple of {kind} heads ({heads}){suffix}")


def _one_batch_axis(x: Array | None) -> Array | None:
    """``x`` (``[batch..., a, b, c]``) with its batch axes flattened into one, or one added."""
    if x is None or x.ndim == 4:
        return x
    return jnp.reshape(x, (-1, *x.shape[-3:]))


def dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Array | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: tp.Any = None,
    module: Module | None = None,
    promote_dtype: tp.Callable = dtypes.promote_dtype,
    is_causal: bool = False,
):
    """Attention ``softmax(q k^T / sqrt(d)) v`` over ``[batch..., length, heads, depth]`` arrays.

    Key/value may have fewer heads than the query (grouped-query attention) as long
    as they divide the query's head count.
    """
    query, key, value = promote_dtype((query, key, value), dtype=dtype)
    if not query.ndim == key.ndim == value.ndim:
        raise ValueError(f"q, k, v must have same rank, but got {query.ndim}, {key.ndim}, {value.ndim}.")
    if not query.shape[:-3] == key.shape[:-3] == value.shape[:-3]:
        raise ValueError(f"q, k, v batch dims must match, but got shapes {query.shape}, {key.shape}, {value.shape}.")
    if key.shape[-3] != value.shape[-3]:
        raise ValueError(f"k, v lengths must match, but got {key.shape[-3]} and {value.shape[-3]}.")
    _check_dropout_rate(dropout_rate)
    if module is None and dropout_rate == 0.0:
        # Nothing to record and no dropout: JAX's fused implementation does it all, over
        # exactly one batch axis (with JAX's error for heads that do not group).
        q_heads, kv_heads = query.shape[-2], key.shape[-2]
        if q_heads % kv_heads != 0:
            raise ValueError(
                f"The number of query heads must be a multiple of key/value heads, but got {q_heads} vs {kv_heads}"
            )
        if mask is not None:
            mask = mask.astype(jnp.bool_)
        q4, k4, v4, bias4, mask4 = (_one_batch_axis(a) for a in (query, key, value, bias, mask))
        out = jax.nn.dot_product_attention(q4, k4, v4, bias4, mask4, is_causal=is_causal)
        return jnp.reshape(out, query.shape)
    weights = dot_product_attention_weights(
        query,
        key,
        bias,
        mask,
        broadcast_dropout,
        dropout_rng,
        dropout_rate,
        deterministic,
        dtype,
        precision,
        module,
        promote_dtype,
        is_causal,
    )
    _check_groups(weights.shape[-3], value.shape[-2], "Value")
    return _weighted_values(weights, value, precision)


def make_attention_mask(
    query_input: Array,
    key_input: Array,
    pairwise_fn: tp.Callable[..., tp.Any] = jnp.multiply,
    extra_batch_dims: int = 0,
    dtype: Dtype = jnp.float32,
):
    """A ``[batch..., 1, q_length, kv_length]`` mask from ``pairwise_fn(query_i, key_j)``."""
    mask = pairwise_fn(jnp.expand_dims(query_input, -1), jnp.expand_dims(key_input, -2))
    mask = jnp.expand_dims(mask, -3)
    mask = jnp.expand_dims(mask, tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x: Array, extra_batch_dims: int = 0, dtype: Dtype = jnp.float32) -> Array:
    """A mask letting position ``i`` attend to positions ``j <= i`` of ``x``'s last axis."""
    positions = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(positions, positions, jnp.greater_equal, extra_batch_dims, dtype)


def combine_masks(*masks: Array | None, dtype: Dtype = jnp.float32) -> Array | None:
    """Logical AND of the given masks (``None`` ones are skipped; all ``None`` gives ``None``)."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    ranks = tuple(m.ndim for m in present)
    if len(set(ranks)) != 1:
        raise ValueError(f"masks must have same rank, but got {ranks}.")
    return functools.reduce(jnp.logical_and, present).astype(dtype)


def _rope_frequencies(theta: float, dim: int, positions: Array) -> tuple[Array, Array]:
    """Sines and cosines ``[..., positions, dim // 2]`` of the rotary angles."""
    exponents = 2 * jnp.arange(dim // 2) / dim
    angles = positions[..., None] / (theta**exponents)
    return jnp.sin(angles), jnp.cos(angles)


def _check_table_fits(x_shape: tuple[int, ...], half_table: tuple[int, ...]) -> None:
    """Raises flax's TypeError when the rotary tables (``half_table``: one half of the last
    axis), prefixed with unit axes to the input's rank, do not broadcast against the input
    (a cached table of another embedding size, or shorter than the sequence)."""
    table = (1,) * (len(x_shape) - len(half_table)) + half_table[:-1] + (2 * half_table[-1],)
    if len(table) != len(x_shape) or any(a != b and 1 not in (a, b) for a, b in zip(x_shape, table)):
        raise TypeError(f"mul got incompatible shapes for broadcasting: {x_shape}, {table}.")


class RoPE(Module):
    """Rotary position embedding over the last axis of ``(..., seq_length, embedding_size)`` inputs."""

    def __init__(
        self,
        theta: float = 10000.0,
        embedding_size: int | None = None,
        max_seq_len: int | None = None,
    ):
        self.theta = theta
        tables = None
        if (embedding_size is None) != (max_seq_len is None):
            raise ValueError("Either both `embedding_size` and `max_seq_len` or none of them must be provided.")
        if embedding_size is not None and max_seq_len is not None:
            if embedding_size <= 0 or embedding_size % 2:
                raise ValueError("`embedding_size` must be positive and even.")
            tables = _rope_frequencies(theta, embedding_size, jnp.arange(max_seq_len))
        self.cached_sin = Variable(tables[0]) if tables is not None else None
        self.cached_cos = Variable(tables[1]) if tables is not None else None

    def __call__(self, x: Array, input_positions: Array | None = None) -> Array:
        seq_len, dim = x.shape[-2:]  # flax's ValueError for inputs of rank 1
        if input_positions is not None and input_positions.shape[-1] != seq_len:
            raise ValueError("`input_positions` must have the same seq_len as `x`.")
        if self.cached_sin is not None:
            # through ``.value``, which warns that it is deprecated, as flax's RoPE does
            cached_sin, cached_cos = self.cached_sin.value, self.cached_cos.value
            if input_positions is None:
                sin, cos = cached_sin[:seq_len], cached_cos[:seq_len]
            else:
                sin, cos = cached_sin[input_positions], cached_cos[input_positions]
        else:
            if dim <= 0 or dim % 2:
                raise ValueError("`embedding_size` must be positive and even.")
            positions = jnp.arange(seq_len) if input_positions is None else input_positions
            sin, cos = _rope_frequencies(self.theta, dim, positions)
        _check_table_fits(x.shape, sin.shape)
        sin, cos = sin.astype(x.dtype), cos.astype(x.dtype)
        first, second = jnp.split(x, 2, axis=-1)
        return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def dot_product_attention_with_rope(
    query: Array,
    key: Array,
    value: Array,
    *,
    rope: RoPE,
    input_positions: Array | None = None,
    **kwargs,
) -> Array:
    """``dot_product_attention`` with ``rope`` applied to query and key along their length axis."""

    def rotate(x: Array) -> Array:
        # [batch..., length, heads, depth] -> [batch..., heads, length, depth] and back.
        positions = input_positions
        if positions is not None:
            positions = jnp.expand_dims(positions, -2)
        return jnp.swapaxes(rope(jnp.swapaxes(x, -3, -2), positions), -3, -2)

    return dot_product_attention(rotate(query), rotate(key), value, **kwargs)


class MultiHeadAttention(Module):
    """Multi-head (optionally grouped-query) attention with an optional autoregressive cache."""

    def __init__(
        self,
        num_heads: int,
        in_features: int,
        qkv_features: int | None = None,
        out_features: int | None = None,
        num_kv_heads: int | None = None,
        in_kv_features: int | None = None,
        *,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        broadcast_dropout: bool = True,
        dropout_rate: float = 0.0,
        deterministic: bool | None = None,
        precision: tp.Any = None,
        kernel_init: Initializer = default_kernel_init,
        out_kernel_init: Initializer | None = None,
        bias_init: Initializer = initializers.zeros_init(),
        out_bias_init: Initializer | None = None,
        use_bias: bool = True,
        attention_fn: tp.Callable[..., Array] = dot_product_attention,
        decode: bool | None = None,
        normalize_qk: bool = False,
        qkv_promote_dtype: tp.Callable = dtypes.promote_dtype,
        out_promote_dtype: tp.Callable = dtypes.promote_dtype,
        ln_promote_dtype: tp.Callable = dtypes.promote_dtype,
        qkv_dot_general: tp.Callable | None = None,
        out_dot_general: tp.Callable | None = None,
        qkv_dot_general_cls: tp.Any = None,
        out_dot_general_cls: tp.Any = None,
        rngs,
        keep_rngs: bool = True,
        kernel_metadata: Metadata = NO_METADATA,
        out_kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
        out_bias_metadata: Metadata = NO_METADATA,
        query_ln_scale_metadata: Metadata = NO_METADATA,
        key_ln_scale_metadata: Metadata = NO_METADATA,
    ):
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features if qkv_features is not None else in_features
        self.out_features = out_features if out_features is not None else in_features
        self.in_kv_features = in_kv_features if in_kv_features is not None else in_features
        self.num_kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.precision = precision
        self.use_bias = use_bias
        self.attention_fn = attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        self.qkv_promote_dtype = qkv_promote_dtype
        self.out_promote_dtype = out_promote_dtype
        self.ln_promote_dtype = ln_promote_dtype
        self.qkv_dot_general = qkv_dot_general
        self.out_dot_general = out_dot_general
        self.qkv_dot_general_cls = qkv_dot_general_cls
        self.out_dot_general_cls = out_dot_general_cls

        if self.qkv_features % num_heads != 0:
            raise ValueError(
                f"Memory dimension ({self.qkv_features}) must be divisible by 'num_heads' heads ({num_heads})."
            )
        if num_heads % self.num_kv_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) must be divisible by num_kv_heads ({self.num_kv_heads}).")
        self.head_dim = self.qkv_features // num_heads

        projection = functools.partial(
            LinearGeneral,
            dtype=dtype,
            param_dtype=param_dtype,
            kernel_init=kernel_init,
            bias_init=bias_init,
            use_bias=use_bias,
            precision=precision,
            dot_general=qkv_dot_general,
            dot_general_cls=qkv_dot_general_cls,
            promote_dtype=qkv_promote_dtype,
            kernel_metadata=kernel_metadata,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        self.query = projection(in_features, (num_heads, self.head_dim))
        self.key = projection(self.in_kv_features, (self.num_kv_heads, self.head_dim))
        self.value = projection(self.in_kv_features, (self.num_kv_heads, self.head_dim))

        qk_norm = functools.partial(
            LayerNorm,
            self.head_dim,
            use_bias=False,
            dtype=dtype,
            param_dtype=param_dtype,
            promote_dtype=ln_promote_dtype,
            rngs=rngs,
        )
        self.query_ln = qk_norm(scale_metadata=query_ln_scale_metadata) if normalize_qk else data(None)
        self.key_ln = qk_norm(scale_metadata=key_ln_scale_metadata) if normalize_qk else data(None)

        self.out = LinearGeneral(
            in_features=(num_heads, self.head_dim),
            out_features=self.out_features,
            axis=(-2, -1),
            kernel_init=out_kernel_init or kernel_init,
            bias_init=out_bias_init or bias_init,
            use_bias=use_bias,
            dtype=dtype,
            param_dtype=param_dtype,
            precision=precision,
            dot_general=out_dot_general,
            dot_general_cls=out_dot_general_cls,
            promote_dtype=out_promote_dtype,
            kernel_metadata=out_kernel_metadata or kernel_metadata,
            bias_metadata=out_bias_metadata or bias_metadata,
            rngs=rngs,
        )
        self.rngs = fork_stream(rngs, "dropout") if keep_rngs and dropout_rate > 0 else None
        self.cached_key: Cache | None = data(None)
        self.cached_value: Cache | None = data(None)
        self.cache_index: Cache | None = data(None)

    def __call__(
        self,
        inputs_q: Array,
        inputs_k: Array | None = None,
        inputs_v: Array | None = None,
        *,
        mask: Array | None = None,
        deterministic: bool | None = None,
        rngs=None,
        sow_weights: bool = False,
        decode: bool | None = None,
        is_causal=False,
        out_sharding=None,
        qkv_sharding=None,
        input_positions: Array | None = None,
    ):
        if rngs is None:
            rngs = self.rngs
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError(
                    "`inputs_k` cannot be None if `inputs_v` is not None. To have both "
                    "`inputs_k` and `inputs_v` be the same value, pass in the value to "
                    "`inputs_k` and leave `inputs_v` as None."
                )
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(
                f"Incompatible input dimension, got {inputs_q.shape[-1]} but module expects {self.in_features}."
            )

        query = self.query(inputs_q, out_sharding=qkv_sharding)
        key = self.key(inputs_k, out_sharding=qkv_sharding)
        value = self.value(inputs_v, out_sharding=qkv_sharding)
        if self.normalize_qk:
            assert self.query_ln is not None and self.key_ln is not None
            query = self.query_ln(query)
            key = self.key_ln(key)

        decode = first_from(
            decode,
            self.decode,
            error_msg="No `decode` argument was provided to MultiHeadAttention "
            "as either a __call__ argument, class attribute, or nnx.flag.",
        )
        if decode:
            key, value, mask = self._update_cache(query, key, value, mask)
            is_causal = False

        if self.dropout_rate > 0.0:
            deterministic = first_from(
                deterministic,
                self.deterministic,
                error_msg="No `deterministic` argument was provided to MultiHeadAttention "
                "as either a __call__ argument, class attribute, or nnx.flag.",
            )
        else:
            deterministic = True
        dropout_rng = None
        if not deterministic:
            if rngs is None:
                raise ValueError(
                    "'rngs' must be provided to __call__ method if "
                    "MultiHeadAttention instance is defined with keep_rngs=False."
                )
            dropout_rng = draw_key(rngs, "dropout")

        extra = {} if input_positions is None else {"input_positions": input_positions}
        x = self.attention_fn(
            query,
            key,
            value,
            mask=mask,
            dropout_rng=dropout_rng,
            dropout_rate=self.dropout_rate,
            broadcast_dropout=self.broadcast_dropout,
            deterministic=deterministic,
            dtype=self.dtype,
            precision=self.precision,
            module=self if sow_weights else None,
            is_causal=is_causal,
            **extra,
        )
        return self.out(x, out_sharding=out_sharding)

    def _update_cache(self, query, key, value, mask):
        """Writes this step's key/value at the cache index; returns the cached ones and a mask."""
        if self.cached_key is None or self.cached_value is None or self.cache_index is None:
            raise ValueError("Autoregressive cache not initialized, call ``init_cache`` first.")
        *batch_dims, max_length, num_heads, depth = self.cached_key.shape
        expected = tuple(batch_dims) + (1, num_heads, depth)
        if expected != key.shape:
            raise ValueError(
                f"Autoregressive cache shape error, expected key shape {expected} instead got {key.shape}."
            )
        index = self.cache_index[...]
        zero = jnp.array(0, dtype=index.dtype)
        start = (zero,) * len(batch_dims) + (index, zero, zero)
        key = lax.dynamic_update_slice(self.cached_key[...], key, start)
        value = lax.dynamic_update_slice(self.cached_value[...], value, start)
        self.cached_key[...] = key
        self.cached_value[...] = value
        self.cache_index[...] = index + 1
        filled = jnp.broadcast_to(jnp.arange(max_length) <= index, tuple(batch_dims) + (1, 1, max_length))
        return key, value, combine_masks(mask, filled)

    def init_cache(self, input_shape: tuple[int, ...], dtype: Dtype = jnp.float32) -> None:
        """Creates a zero key/value cache for inputs of ``input_shape`` (batch..., length, features)."""
        self._set_cache((*input_shape[:-1], self.num_kv_heads, self.head_dim), dtype)

    def _set_cache(self, shape: tuple[int, ...], dtype: Dtype | None) -> None:
        """Zero cached keys and values of ``shape`` and a zero cache index."""
        self.cached_key = Cache(jnp.zeros(shape, dtype))
        self.cached_value = Cache(jnp.zeros(shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))

    def set_view(
        self,
        deterministic: bool | None = None,
        decode: bool | None = None,
        batch_size: int | Shape | None = None,
        max_length: int | None = None,
    ) -> None:
        """Sets the modes ``nnx.view`` asks for.

        Args:
          deterministic: if True, the module is set to deterministic mode.
          decode: if True, the module is set to decode mode.
          batch_size: the batch size to use for the cache.
          max_length: the max length to use for the cache.
        """
        if deterministic is not None:
            self.deterministic = deterministic
        if decode is not None:
            self.decode = decode
            if not all(hasattr(self, name) for name in ("cached_key", "cached_value", "cache_index")):
                self._make_cache(batch_size, max_length)

    def _make_cache(self, batch_size: int | Shape | None, max_length: int | None) -> None:
        """A zero cache of ``max_length`` steps for ``batch_size`` (an int or a shape) in this
        layer's dtype, as ``set_view`` makes one for a layer without cache attributes."""
        if batch_size is None:
            raise TypeError("'batch_size' must be provided when initializing cache.")
        if max_length is None:
            raise TypeError("'max_length' must be provided when initializing cache.")
        batch = (batch_size,) if isinstance(batch_size, int) else tuple(batch_size)
        self._set_cache((*batch, max_length, self.num_kv_heads, self.head_dim), self.dtype)
