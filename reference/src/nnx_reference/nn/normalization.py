"""Normalization layers: batch, layer, RMS, group and instance norm (spectral and weight
norm, which rescale a wrapped layer's weights, live in ``weight_normalization``)."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp
from jax import lax

from ..module import Module
from ..pytreelib import data
from ..variablelib import BatchStat, Param
from . import dtypes, initializers
from .aliases import NO_METADATA, Array, Dtype, Metadata, optional_value
from .axes import Axes, canonicalize_axes
from .flags import first_from, missing_flag_message
from .initializers import Initializer
from .weight_normalization import SpectralNorm, WeightNorm

__all__ = [
    "BatchNorm",
    "GroupNorm",
    "InstanceNorm",
    "LayerNorm",
    "RMSNorm",
    "SpectralNorm",
    "WeightNorm",
]


def _abs_sq(x: Array) -> Array:
    if jnp.iscomplexobj(x):
        return lax.square(lax.real(x)) + lax.square(lax.imag(x))
    return lax.square(x)


def _compute_stats(
    x: Array,
    axes: Axes,
    dtype: Dtype | None,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_mean: bool = True,
    use_fast_variance: bool = True,
    mask: Array | None = None,
) -> tuple[Array, Array]:
    """Mean and variance of ``x`` over ``axes`` (at least in float32), optionally across devices."""
    if dtype is None:
        dtype = jnp.result_type(x)
    dtype = jnp.promote_types(dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    axes = canonicalize_axes(x.ndim, axes)

    def mean(v: Array) -> Array:
        m = jnp.mean(v, axes, where=mask)
        if axis_name is not None:
            m = lax.pmean(m, axis_name=axis_name, axis_index_groups=axis_index_groups)
        return m

    if use_mean:
        if use_fast_variance:
            # Squared before the mean is taken: the gradient then sums its terms in flax's order.
            squared = _abs_sq(x)
            mu, mu2 = mean(x), mean(squared)
            var = jnp.maximum(0.0, mu2 - _abs_sq(mu))
        else:
            mu = mean(x)
            centered = x - jnp.expand_dims(mu, axes)
            var = mean(_abs_sq(centered))
    else:
        var = mean(_abs_sq(x))
        mu = jnp.zeros_like(var)
    return mu, var


def _normalize(
    x: Array,
    mean: Array,
    var: Array,
    scale: Array | None,
    bias: Array | None,
    reduction_axes: Axes,
    feature_axes: Axes,
    dtype: Dtype | None,
    epsilon: float,
) -> Array:
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` with stats broadcast over ``x``."""
    reduction_axes = canonicalize_axes(x.ndim, reduction_axes)
    feature_axes = canonicalize_axes(x.ndim, feature_axes)
    stats_shape = tuple(1 if i in reduction_axes else d for i, d in enumerate(x.shape))
    feature_shape = tuple(d if i in feature_axes else 1 for i, d in enumerate(x.shape))
    mean = jnp.reshape(mean, stats_shape)
    var = jnp.reshape(var, stats_shape)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if scale is not None:
        scale = jnp.reshape(scale, feature_shape)
        mul = mul * scale
        args.append(scale)
    y = y * mul
    if bias is not None:
        bias = jnp.reshape(bias, feature_shape)
        y = y + bias
        args.append(bias)
    return jnp.asarray(y, dtypes.canonicalize_dtype(*args, dtype=dtype))


def _scale_and_bias(
    module: Module,
    feature_shape: tuple[int, ...],
    *,
    use_scale: bool,
    use_bias: bool,
    scale_init: Initializer,
    bias_init: Initializer,
    param_dtype: Dtype,
    rngs,
    scale_metadata: Metadata,
    bias_metadata: Metadata,
    left_out_is_data: bool = True,
) -> None:
    """Creates the optional ``scale`` then ``bias`` parameters of a norm layer; one left out
    is None, a data attribute unless ``left_out_is_data`` is False (as flax's InstanceNorm)."""
    left_out = data(None) if left_out_is_data else None
    module.scale = (
        Param(scale_init(rngs.params(), feature_shape, param_dtype), **scale_metadata) if use_scale else left_out
    )
    module.bias = Param(bias_init(rngs.params(), feature_shape, param_dtype), **bias_metadata) if use_bias else left_out


class BatchNorm(Module):
    """Normalizes over the batch; keeps running averages of the statistics as ``BatchStat``."""

    def __init__(
        self,
        num_features: int,
        *,
        use_running_average: bool | None = False,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-5,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Initializer = initializers.zeros_init(),
        scale_init: Initializer = initializers.ones_init(),
        axis_name: str | None = None,
        axis_index_groups: tp.Any = None,
        use_fast_variance: bool = True,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        bias_metadata: Metadata = NO_METADATA,
        scale_metadata: Metadata = NO_METADATA,
    ):
        feature_shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(feature_shape, jnp.float32))
        self.var = BatchStat(jnp.ones(feature_shape, jnp.float32))
        _scale_and_bias(
            self,
            feature_shape,
            use_scale=use_scale,
            use_bias=use_bias,
            scale_init=scale_init,
            bias_init=bias_init,
            param_dtype=param_dtype,
            rngs=rngs,
            scale_metadata=scale_metadata,
            bias_metadata=bias_metadata,
        )
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x, use_running_average: bool | None = None, *, mask: Array | None = None):
        use_running_average = first_from(
            use_running_average,
            self.use_running_average,
            error_msg=missing_flag_message("use_running_average", "BatchNorm", "bn"),
        )
        feature_axes = canonicalize_axes(x.ndim, self.axis)
        reduction_axes = tuple(i for i in range(x.ndim) if i not in feature_axes)
        x, ra_mean, ra_var, scale, bias = self.promote_dtype(
            (x, self.mean[...], self.var[...], optional_value(self.scale), optional_value(self.bias)),
            dtype=self.dtype,
        )
        if use_running_average:
            mean, var = ra_mean, ra_var
        else:
            mean, var = _compute_stats(
                x,
                reduction_axes,
                dtype=self.dtype,
                axis_name=self.axis_name,
                axis_index_groups=self.axis_index_groups,
                use_fast_variance=self.use_fast_variance,
                mask=mask,
            )
            # The running averages are updated in their stored dtype, not the computation's,
            # and carry no gradient back to the batch.
            self.mean[...] = lax.stop_gradient(self.momentum * self.mean[...] + (1 - self.momentum) * mean)
            self.var[...] = lax.stop_gradient(self.momentum * self.var[...] + (1 - self.momentum) * var)
        return _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon)

    def set_view(self, use_running_average: bool | None = None) -> None:
        """Sets the mode ``nnx.view`` asks for: running averages (eval) or batch statistics.

        Args:
          use_running_average: if True, the stored batch statistics will be
            used instead of computing the batch statistics on the input.
        """
        if use_running_average is not None:
            self.use_running_average = use_running_average


class LayerNorm(Module):
    """Normalizes each example over ``reduction_axes`` (by default the last axis)."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Initializer = initializers.zeros_init(),
        scale_init: Initializer = initializers.ones_init(),
        reduction_axes: Axes = -1,
        feature_axes: Axes = -1,
        axis_name: str | None = None,
        axis_index_groups: tp.Any = None,
        use_fast_variance: bool = True,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        bias_metadata: Metadata = NO_METADATA,
        scale_metadata: Metadata = NO_METADATA,
    ):
        _scale_and_bias(
            self,
            (num_features,),
            use_scale=use_scale,
            use_bias=use_bias,
            scale_init=scale_init,
            bias_init=bias_init,
            param_dtype=param_dtype,
            rngs=rngs,
            scale_metadata=scale_metadata,
            bias_metadata=bias_metadata,
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x, *, mask: Array | None = None):
        x, scale, bias = self.promote_dtype(
            (x, optional_value(self.scale), optional_value(self.bias)), dtype=self.dtype
        )
        mean, var = _compute_stats(
            x,
            self.reduction_axes,
            self.dtype,
            self.axis_name,
            self.axis_index_groups,
            use_fast_variance=self.use_fast_variance,
            mask=mask,
        )
        return _normalize(
            x,
            mean,
            var,
            scale,
            bias,
            self.reduction_axes,
            self.feature_axes,
            self.dtype,
            self.epsilon,
        )


class RMSNorm(Module):
    """Scales each example by the inverse root mean square over ``reduction_axes`` (no centring)."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        use_scale: bool = True,
        scale_init: Initializer = initializers.ones_init(),
        reduction_axes: Axes = -1,
        feature_axes: Axes = -1,
        axis_name: str | None = None,
        axis_index_groups: tp.Any = None,
        use_fast_variance: bool = True,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        scale_metadata: Metadata = NO_METADATA,
    ):
        self.scale = (
            Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata)
            if use_scale
            else data(None)
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x, mask: Array | None = None):
        x, scale = self.promote_dtype((x, optional_value(self.scale)), dtype=self.dtype)
        mean, var = _compute_stats(
            x,
            self.reduction_axes,
            self.dtype,
            self.axis_name,
            self.axis_index_groups,
            use_mean=False,
            use_fast_variance=self.use_fast_variance,
            mask=mask,
        )
        return _normalize(
            x,
            mean,
            var,
            scale,
            None,
            self.reduction_axes,
            self.feature_axes,
            self.dtype,
            self.epsilon,
        )


class GroupNorm(Module):
    """Normalizes each example over groups of channels (and the spatial axes)."""

    def __init__(
        self,
        num_features: int,
        num_groups: int | None = 32,
        group_size: int | None = None,
        *,
        epsilon: float = 1e-6,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Initializer = initializers.zeros_init(),
        scale_init: Initializer = initializers.ones_init(),
        reduction_axes: Axes | None = None,
        axis_name: str | None = None,
        axis_index_groups: tp.Any = None,
        use_fast_variance: bool = True,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        bias_metadata: Metadata = NO_METADATA,
        scale_metadata: Metadata = NO_METADATA,
    ):
        self.feature_axis = -1
        if (num_groups is None) == (group_size is None):
            raise ValueError(
                "Either `num_groups` or `group_size` should be specified. If "
                "`group_size` is to be specified, pass `num_groups=None` as "
                "argument to override the default `num_groups` value of 32."
            )
        if group_size is not None:
            if num_features % group_size != 0:
                raise ValueError(
                    f"Number of features ({num_features}) is not multiple of the group size ({group_size})."
                )
            num_groups = num_features // group_size
        assert num_groups is not None
        if num_groups <= 0 or num_features % num_groups != 0:
            raise ValueError(
                f"Number of groups ({num_groups}) does not divide the number of channels ({num_features})."
            )
        self.num_groups = num_groups
        self.group_size = num_features // num_groups
        _scale_and_bias(
            self,
            (num_features,),
            use_scale=use_scale,
            use_bias=use_bias,
            scale_init=scale_init,
            bias_init=bias_init,
            param_dtype=param_dtype,
            rngs=rngs,
            scale_metadata=scale_metadata,
            bias_metadata=bias_metadata,
        )
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x, *, mask: Array | None = None):
        if self.reduction_axes is not None:
            reduction_axes = self.reduction_axes
        else:
            reduction_axes = list(range(1, x.ndim - 1)) + [-1]
        reduction_axes = canonicalize_axes(x.ndim, reduction_axes)
        x, scale, bias = self.promote_dtype(
            (x, optional_value(self.scale), optional_value(self.bias)), dtype=self.dtype
        )
        group_shape = x.shape[:-1] + (self.num_groups, self.group_size)
        if mask is not None:
            # Grouped on its own leading shape: any mask broadcastable to ``x`` will do.
            mask = jnp.reshape(mask, mask.shape[:-1] + (self.num_groups, self.group_size))
        # In the grouped view the channel axis becomes (group, member): reduce over
        # the spatial axes and the members, keep one statistic per group.
        mean, var = _compute_stats(
            jnp.reshape(x, group_shape),
            list(reduction_axes[:-1]) + [-1],
            self.dtype,
            self.axis_name,
            self.axis_index_groups,
            use_fast_variance=self.use_fast_variance,
            mask=mask,
        )
        mean = jnp.repeat(mean, self.group_size, axis=-1)
        var = jnp.repeat(var, self.group_size, axis=-1)
        return _normalize(
            x,
            mean,
            var,
            scale,
            bias,
            reduction_axes[:-1],
            (self.feature_axis,),
            self.dtype,
            self.epsilon,
        )


class InstanceNorm(Module):
    """Normalizes each example and channel over the remaining (spatial) axes."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Initializer = initializers.zeros_init(),
        scale_init: Initializer = initializers.ones_init(),
        feature_axes: Axes = -1,
        axis_name: str | None = None,
        axis_index_groups: tp.Any = None,
        use_fast_variance: bool = True,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        bias_metadata: Metadata = NO_METADATA,
        scale_metadata: Metadata = NO_METADATA,
    ):
        _scale_and_bias(
            self,
            (num_features,),
            use_scale=use_scale,
            use_bias=use_bias,
            scale_init=scale_init,
            bias_init=bias_init,
            param_dtype=param_dtype,
            rngs=rngs,
            scale_metadata=scale_metadata,
            bias_metadata=bias_metadata,
            left_out_is_data=False,
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x, *, mask: Array | None = None):
        feature_axes = canonicalize_axes(x.ndim, self.feature_axes)
        if 0 in feature_axes:
            raise ValueError(
                "The channel axes cannot include the leading dimension as this is assumed to be the batch axis."
            )
        reduction_axes = tuple(i for i in range(1, x.ndim) if i not in feature_axes)
        x, scale, bias = self.promote_dtype(
            (x, optional_value(self.scale), optional_value(self.bias)), dtype=self.dtype
        )
        mean, var = _compute_stats(
            x,
            reduction_axes,
            self.dtype,
            self.axis_name,
            self.axis_index_groups,
            use_fast_variance=self.use_fast_variance,
            mask=mask,
        )
        return _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon)
