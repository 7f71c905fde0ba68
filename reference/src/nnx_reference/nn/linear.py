"""Dense, einsum, convolution and embedding layers."""

from __future__ import annotations

import math
import typing as tp

import jax.numpy as jnp
from jax import lax

from .._frozen_dict import FrozenDict
from ..module import Module
from ..pytreelib import data
from ..variablelib import Param, VariableMetadata
from . import dtypes, initializers
from .aliases import NO_METADATA, Array, Dtype, Metadata, optional_value
from .axes import canonicalize_axes, flatten_batch, restore_batch
from .initializers import Initializer

__all__ = ["Conv", "ConvTranspose", "Einsum", "Embed", "Linear", "LinearGeneral"]

PaddingLike = str | int | tp.Sequence[int | tuple[int, int]]

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros_init()
default_embed_init = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, tp.Sequence) else (x,)


def _reshaped(value: tp.Any, shape: tuple[int, ...]) -> tp.Any:
    """An initializer's output reshaped to ``shape``; a ``VariableMetadata`` keeps its metadata."""
    if isinstance(value, VariableMetadata):
        value.raw_value = jnp.reshape(value.raw_value, shape)
        return value
    return jnp.reshape(value, shape)


def _sharding_kw(out_sharding) -> dict[str, tp.Any]:
    """``out_sharding`` as a keyword, left out when ``None``."""
    return {} if out_sharding is None else {"out_sharding": out_sharding}


def _op_keywords(preferred_element_type: Dtype | None, out_sharding: tp.Any) -> dict[str, tp.Any]:
    """The keywords a layer's contraction (its ``dot_general``, ``einsum_op`` or
    ``conv_general_dilated``, a user's own included) gets besides ``precision``, as flax
    passes them: ``out_sharding`` always, ``preferred_element_type`` when set."""
    keywords = {"out_sharding": out_sharding}
    if preferred_element_type is not None:
        keywords["preferred_element_type"] = preferred_element_type
    return keywords


def _add_bias(y: Array, bias: Array | None) -> Array:
    """Adds a bias over the last axis of ``y``."""
    if bias is None:
        return y
    return y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))


class Linear(Module):
    """``y = x @ kernel + bias`` over the last axis of the input."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        use_bias: bool = True,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        precision: tp.Any = None,
        kernel_init: Initializer = default_kernel_init,
        bias_init: Initializer = default_bias_init,
        dot_general: tp.Callable = lax.dot_general,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        preferred_element_type: Dtype | None = None,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self.kernel = Param(
            kernel_init(rngs.params(), (in_features, out_features), param_dtype),
            **kernel_metadata,
        )
        self.bias = (
            Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata) if use_bias else data(None)
        )
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Array, out_sharding=None) -> Array:
        bias = optional_value(self.bias)
        inputs, kernel, bias = self.promote_dtype((inputs, self.kernel[...], bias), dtype=self.dtype)
        y = self.dot_general(
            inputs,
            kernel,
            (((inputs.ndim - 1,), (0,)), ((), ())),
            precision=self.precision,
            **_op_keywords(self.preferred_element_type, out_sharding),
        )
        return _add_bias(y, bias)


class LinearGeneral(Module):
    """A dense layer contracting any set of input axes, with optional batch axes."""

    def __init__(
        self,
        in_features: int | tp.Sequence[int],
        out_features: int | tp.Sequence[int],
        *,
        axis: int | tp.Sequence[int] = -1,
        batch_axis: tp.Mapping[int, int] = FrozenDict({}),
        use_bias: bool = True,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        kernel_init: Initializer = default_kernel_init,
        bias_init: Initializer = default_bias_init,
        precision: tp.Any = None,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        dot_general: tp.Callable | None = None,
        dot_general_cls: tp.Any = None,
        preferred_element_type: Dtype | None = None,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self.in_features = _as_tuple(in_features)
        self.out_features = _as_tuple(out_features)
        self.axis = _as_tuple(axis)
        self.batch_axis = FrozenDict(batch_axis)
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.dot_general_cls = dot_general_cls
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

        if len(self.axis) != len(self.in_features):
            raise ValueError(f"in_features and axis must have the same length. Got {self.in_features} and {self.axis}.")
        if self.batch_axis and set(self.batch_axis) != set(range(max(self.batch_axis) + 1)):
            raise ValueError(
                f"batch_dims {tuple(self.batch_axis)} must be consecutive leading dimensions starting from 0."
            )
        batch_sizes = tuple(self.batch_axis.values())
        batch_size = math.prod(batch_sizes)
        kernel_shape = batch_sizes + self.in_features + self.out_features
        # Initialise as the (fan_in, fan_out) matrix the kernel acts as, then reshape.
        flat_kernel_shape = (
            batch_size * math.prod(self.in_features),
            math.prod(self.out_features),
        )
        self.kernel = Param(
            _reshaped(kernel_init(rngs.params(), flat_kernel_shape, param_dtype), kernel_shape),
            **kernel_metadata,
        )
        bias_shape = batch_sizes + self.out_features
        flat_bias_shape = (batch_size * math.prod(self.out_features),)
        self.bias = (
            Param(
                _reshaped(bias_init(rngs.params(), flat_bias_shape, param_dtype), bias_shape),
                **bias_metadata,
            )
            if use_bias
            else data(None)
        )

    def __call__(self, inputs: Array, out_sharding=None) -> Array:
        ndim = inputs.ndim
        n_batch = len(self.batch_axis)
        axis = canonicalize_axes(ndim, self.axis)
        batch_dims = canonicalize_axes(ndim, tuple(self.batch_axis))
        contract_ind = tuple(range(n_batch, n_batch + len(axis)))
        batch_ind = tuple(range(n_batch))

        bias = optional_value(self.bias)
        inputs, kernel, bias = self.promote_dtype((inputs, self.kernel[...], bias), dtype=self.dtype)
        if self.dot_general_cls is not None:
            dot_general = self.dot_general_cls()
        elif self.dot_general is not None:
            dot_general = self.dot_general
        else:
            dot_general = lax.dot_general
        y = dot_general(
            inputs,
            kernel,
            ((axis, contract_ind), (batch_dims, batch_ind)),
            precision=self.precision,
            **_op_keywords(self.preferred_element_type, out_sharding),
        )
        if bias is not None:
            # The output is (batch axes, free input axes, out features): give the
            # bias a unit axis for every free input axis.
            n_free = ndim - len(axis) - n_batch
            bias = jnp.reshape(bias, bias.shape[:n_batch] + (1,) * n_free + bias.shape[n_batch:])
            y = y + bias
        return y


class Einsum(Module):
    """``y = einsum(einsum_str, x, kernel) + bias`` with a learned kernel."""

    def __init__(
        self,
        einsum_str: str,
        kernel_shape: tp.Sequence[int],
        bias_shape: tp.Sequence[int] | None = None,
        *,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        precision: tp.Any = None,
        kernel_init: Initializer = default_kernel_init,
        bias_init: Initializer = default_bias_init,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        einsum_op: tp.Callable = jnp.einsum,
        preferred_element_type: Dtype | None = None,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        einsum_str = einsum_str.replace(" ", "")
        self._check_einsum_str(einsum_str)
        self.kernel = Param(kernel_init(rngs.params(), tuple(kernel_shape), param_dtype), **kernel_metadata)
        self.bias = (
            Param(bias_init(rngs.params(), tuple(bias_shape), param_dtype), **bias_metadata)
            if bias_shape is not None
            else data(None)
        )
        self.einsum_str = einsum_str
        self.kernel_shape = tuple(kernel_shape)
        self.bias_shape = tuple(bias_shape) if bias_shape is not None else None
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type

    @staticmethod
    def _check_einsum_str(einsum_str: str) -> None:
        if "->" not in einsum_str:
            raise ValueError('`einsum_str` equation must be explicit and include "->".')
        if einsum_str.count(",") != 1:
            raise ValueError(
                "`einsum_str` equation must have exactly two operands and therefore, "
                f"exactly one comma character, instead of {einsum_str.count(',')}"
            )

    def __call__(self, inputs: Array, einsum_str: str | None = None, out_sharding=None) -> Array:
        if einsum_str is None:
            einsum_str = self.einsum_str
        einsum_str = einsum_str.replace(" ", "")
        self._check_einsum_str(einsum_str)
        bias = optional_value(self.bias)
        inputs, kernel, bias = self.promote_dtype((inputs, self.kernel[...], bias), dtype=self.dtype)
        y = self.einsum_op(
            einsum_str,
            inputs,
            kernel,
            precision=self.precision,
            **_op_keywords(self.preferred_element_type, out_sharding),
        )
        if bias is not None:
            y = y + jnp.reshape(bias, self._bias_broadcast_shape(einsum_str, y.ndim))
        return y

    def _bias_broadcast_shape(self, einsum_str: str, out_ndim: int) -> list[int]:
        """The bias's shape against the output: the kernel's size on every output axis the
        kernel has (shared with the input or not), 1 elsewhere, the ellipsis included."""
        operands, out = einsum_str.split("->")
        kernel_labels = operands.split(",")[1]
        if "..." in out:
            before, after = out.split("...")
            labels = [*before, *[None] * (out_ndim - len(before) - len(after)), *after]
        else:
            labels = list(out)
        return [self.kernel_shape[kernel_labels.index(c)] if c and c in kernel_labels else 1 for c in labels]


def canonicalize_padding(padding: PaddingLike, rank: int) -> str | list[tuple[int, int]]:
    """Turns a padding spec into a string or one ``(low, high)`` pair per spatial axis."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, tp.Sequence) and len(padding) == rank:
        pairs = []
        for p in padding:
            if isinstance(p, int):
                pairs.append((p, p))
            elif isinstance(p, tuple) and len(p) == 2:
                pairs.append(p)
            else:
                break
        if len(pairs) == rank:
            return pairs
    raise ValueError(
        f"Invalid padding format: {padding}, should be str, int, or a sequence of "
        f"len {rank} where each element is an int or pair of ints."
    )


def _per_axis(value: int | tp.Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Broadcasts a stride/dilation argument to one int per spatial axis."""
    if value is None:
        value = 1
    if isinstance(value, int):
        return (value,) * rank
    return tuple(value)


def _channels_last_dimension_numbers(ndim: int) -> lax.ConvDimensionNumbers:
    spatial = tuple(range(1, ndim - 1))
    return lax.ConvDimensionNumbers(
        lhs_spec=(0, ndim - 1) + spatial,
        rhs_spec=(ndim - 1, ndim - 2) + tuple(range(ndim - 2)),
        out_spec=(0, ndim - 1) + spatial,
    )


def _masked_kernel(kernel: Array, mask: Array | None) -> Array:
    if mask is None:
        return kernel
    if mask.shape != kernel.shape:
        raise ValueError(f"Mask needs to have the same shape as weights. Shapes are: {mask.shape}, {kernel.shape}")
    return kernel * mask


class Conv(Module):
    """N-d convolution over channels-last inputs, wrapping ``lax.conv_general_dilated``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel_size: int | tp.Sequence[int],
        strides: int | tp.Sequence[int] | None = 1,
        *,
        padding: PaddingLike = "SAME",
        input_dilation: int | tp.Sequence[int] | None = 1,
        kernel_dilation: int | tp.Sequence[int] | None = 1,
        feature_group_count: int = 1,
        use_bias: bool = True,
        mask: Array | None = None,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        precision: tp.Any = None,
        kernel_init: Initializer = default_kernel_init,
        bias_init: Initializer = default_bias_init,
        conv_general_dilated: tp.Callable = lax.conv_general_dilated,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        preferred_element_type: Dtype | None = None,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.kernel_shape = kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype), **kernel_metadata)
        self.bias = (
            Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata) if use_bias else data(None)
        )
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.conv_general_dilated = conv_general_dilated
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Array, out_sharding=None) -> Array:
        rank = len(self.kernel_size)
        inputs, batch_shape = flatten_batch(inputs, rank)
        strides = _per_axis(self.strides, rank)
        input_dilation = _per_axis(self.input_dilation, rank)
        kernel_dilation = _per_axis(self.kernel_dilation, rank)

        padding = canonicalize_padding(self.padding, rank)
        if padding in ("CIRCULAR", "REFLECT"):
            dilated = [(k - 1) * d + 1 for k, d in zip(self.kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            mode = "wrap" if padding == "CIRCULAR" else "reflect"
            inputs = jnp.pad(inputs, pads, mode=mode)
            padding = "VALID"
        elif padding == "CAUSAL":
            if rank != 1:
                raise ValueError("Causal padding is only implemented for 1D convolutions.")
            left = kernel_dilation[0] * (self.kernel_size[0] - 1)
            inputs = jnp.pad(inputs, [(0, 0), (left, 0), (0, 0)])
            padding = "VALID"

        kernel = _masked_kernel(self.kernel[...], self.mask)
        bias = optional_value(self.bias)
        inputs, kernel, bias = self.promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        y = self.conv_general_dilated(
            inputs,
            kernel,
            strides,
            padding,
            lhs_dilation=input_dilation,
            rhs_dilation=kernel_dilation,
            dimension_numbers=_channels_last_dimension_numbers(inputs.ndim),
            feature_group_count=self.feature_group_count,
            precision=self.precision,
            **_op_keywords(self.preferred_element_type, out_sharding),
        )
        return restore_batch(_add_bias(y, bias), batch_shape)


def _fold_circular(y: Array, periods: tp.Sequence[int], transpose_kernel: bool) -> Array:
    """Wraps each spatial axis of ``y`` onto its period by summing the overlapping parts."""
    sizes = y.shape[1:-1]
    diffs = [-(size - period) % (2 * period) for size, period in zip(sizes, periods)]
    if transpose_kernel:
        pads = [(d // 2, (d + 1) // 2) for d in diffs]
    else:
        pads = [((d + 1) // 2, d // 2) for d in diffs]
    y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
    for axis, period in enumerate(periods, start=1):
        y = jnp.reshape(y, y.shape[:axis] + (-1, period) + y.shape[axis + 1 :])
        y = jnp.sum(y, axis=axis)
    return y


class ConvTranspose(Module):
    """Transposed convolution over channels-last inputs, wrapping ``lax.conv_transpose``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel_size: int | tp.Sequence[int],
        strides: int | tp.Sequence[int] | None = None,
        *,
        padding: PaddingLike = "SAME",
        kernel_dilation: int | tp.Sequence[int] | None = None,
        use_bias: bool = True,
        mask: Array | None = None,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        precision: tp.Any = None,
        kernel_init: Initializer = default_kernel_init,
        bias_init: Initializer = default_bias_init,
        transpose_kernel: bool = False,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        preferred_element_type: Dtype | None = None,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.kernel_size = kernel_size
        self.in_features = in_features
        self.out_features = out_features
        self.strides = strides
        self.padding = padding
        self.kernel_dilation = kernel_dilation
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.transpose_kernel = transpose_kernel
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        channels = (out_features, in_features) if transpose_kernel else (in_features, out_features)
        self.kernel_shape = kernel_size + channels
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype), **kernel_metadata)
        self.bias = (
            Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata) if use_bias else data(None)
        )

    def __call__(self, inputs: Array) -> Array:
        rank = len(self.kernel_size)
        inputs, batch_shape = flatten_batch(inputs, rank)
        strides = _per_axis(self.strides, rank)
        kernel_dilation = _per_axis(self.kernel_dilation, rank)
        padding = canonicalize_padding(self.padding, rank)
        lax_padding = "VALID" if padding == "CIRCULAR" else padding

        kernel = _masked_kernel(self.kernel[...], self.mask)
        bias = optional_value(self.bias)
        inputs, kernel, bias = self.promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        y = lax.conv_transpose(
            inputs,
            kernel,
            strides,
            lax_padding,
            rhs_dilation=kernel_dilation,
            transpose_kernel=self.transpose_kernel,
            precision=self.precision,
            preferred_element_type=self.preferred_element_type,
        )
        if padding == "CIRCULAR":
            periods = [size * s for size, s in zip(inputs.shape[1:-1], strides)]
            y = _fold_circular(y, periods, self.transpose_kernel)
        return restore_batch(_add_bias(y, bias), batch_shape)


class Embed(Module):
    """A lookup table from integer ids in ``[0, num_embeddings)`` to feature vectors."""

    def __init__(
        self,
        num_embeddings: int,
        features: int,
        *,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        embedding_init: Initializer = default_embed_init,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        embedding_metadata: Metadata = NO_METADATA,
    ):
        self.embedding = Param(
            embedding_init(rngs.params(), (num_embeddings, features), param_dtype),
            **embedding_metadata,
        )
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype or self.embedding[...].dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Array, out_sharding=None) -> Array:
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError("Input type must be an integer or unsigned integer.")
        (embedding,) = self.promote_dtype((self.embedding[...],), dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        if out_sharding is None:
            return jnp.take(embedding, inputs, axis=0)
        return embedding.at[inputs].get(out_sharding=out_sharding)

    def attend(self, query: Array, out_sharding=None) -> Array:
        """Returns the inner products of ``query`` with every embedding (tied output logits)."""
        query, embedding = self.promote_dtype((query, self.embedding[...]), dtype=self.dtype)
        return jnp.dot(query, embedding.T, **_sharding_kw(out_sharding))
