"""Normalization layers: batch, layer, RMS, group and instance norm; spectral and weight norm."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp
from jax import lax

from nnx_reference import graphlib
from nnx_reference.filterlib import PathContains
from nnx_reference.module import Module
from nnx_reference.nn.aliases import NO_METADATA, Array, Dtype, Metadata, optional_value
from nnx_reference.nn.axes import Axes, canonicalize_axes
from nnx_reference.nn import dtypes, initializers
from nnx_reference.nn.flags import first_from, missing_flag_message
from nnx_reference.nn.initializers import Initializer
from nnx_reference.pytreelib import data
from nnx_reference.statelib import to_flat_state
from nnx_reference.variablelib import BatchStat, Param

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
) -> None:
    """Creates the optional ``scale`` then ``bias`` parameters of a norm layer."""
    module.scale = (
        Param(scale_init(rngs.params(), feature_shape, param_dtype), **scale_metadata)
        if use_scale
        else None
    )
    module.bias = (
        Param(bias_init(rngs.params(), feature_shape, param_dtype), **bias_metadata)
        if use_bias
        else None
    )


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
        return _normalize(
            x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon
        )

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
            x, mean, var, scale, bias, self.reduction_axes, self.feature_axes,
            self.dtype, self.epsilon,
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
            else None
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
            x, mean, var, scale, None, self.reduction_axes, self.feature_axes,
            self.dtype, self.epsilon,
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
                    f"Number of features ({num_features}) is not multiple of the "
                    f"group size ({group_size})."
                )
            num_groups = num_features // group_size
        assert num_groups is not None
        if num_groups <= 0 or num_features % num_groups != 0:
            raise ValueError(
                f"Number of groups ({num_groups}) does not divide the number of "
                f"channels ({num_features})."
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
            x, mean, var, scale, bias, reduction_axes[:-1], (self.feature_axis,),
            self.dtype, self.epsilon,
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
        return _normalize(
            x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon
        )


def _variables_of(layer: Module, variable_filter: tp.Any) -> list[tuple[tuple, tp.Any]]:
    """The Variables of ``layer`` that ``variable_filter`` selects, in the state's path order."""
    return [(tuple(path), v) for path, v in to_flat_state(graphlib.state(layer, variable_filter))]


def _matrices_of(layer: Module) -> list[tuple[tuple, tp.Any]]:
    """The ``Param``s of ``layer`` with two or more dimensions (those SpectralNorm rescales)."""
    return [(path, p) for path, p in _variables_of(layer, Param) if p[...].ndim > 1]


def _l2_normalize(x: Array, axis=None, eps: float = 1e-12) -> Array:
    return x * lax.rsqrt(jnp.sum(x * x, axis=axis, keepdims=True) + eps)


class SpectralNorm(Module):
    """Wraps a layer and rescales its weight matrices to spectral norm 1 before each call.

    The largest singular value is estimated by power iteration; the iteration vector
    ``u`` and the estimate ``sigma`` of each weight are kept as ``BatchStat``s in
    ``batch_stats[path + ('u',)]`` and ``batch_stats[path + ('sigma',)]``.
    """

    def __init__(
        self,
        layer_instance: Module,
        *,
        n_steps: int = 1,
        epsilon: float = 1e-12,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        error_on_non_matrix: bool = False,
        update_stats: bool = True,
        rngs,
    ):
        self.layer_instance = layer_instance
        self.n_steps = n_steps
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.error_on_non_matrix = error_on_non_matrix
        self.use_running_average = not update_stats
        batch_stats = {}
        for path, param in _matrices_of(layer_instance):
            value = self._as_matrix(param[...])
            batch_stats[path + ("u",)] = BatchStat(
                initializers.normal()(rngs.params(), (1, value.shape[-1]), param_dtype)
            )
            batch_stats[path + ("sigma",)] = BatchStat(jnp.ones((), param_dtype))
        self.batch_stats = data(batch_stats)

    def _as_matrix(self, value: Array) -> Array:
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(
                    f"Layer instance parameter is {value.ndim}D but error_on_non_matrix is True"
                )
            value = jnp.reshape(value, (-1, value.shape[-1]))
        return value

    def __call__(self, x, update_stats: bool | None = None):
        update_stats = not self.use_running_average if update_stats is None else update_stats
        for path, param in _matrices_of(self.layer_instance):
            param[...] = self._normalize(path, param[...], update_stats)
        return self.layer_instance(x)

    def _normalize(self, path: tuple, weight: Array, update_stats: bool) -> Array:
        if self.n_steps < 1:
            return weight
        u_stat = self.batch_stats[path + ("u",)]
        sigma_stat = self.batch_stats[path + ("sigma",)]
        matrix = self._as_matrix(weight)
        u = u_stat[...]
        v = u
        for _ in range(self.n_steps):
            v = _l2_normalize(u @ matrix.T, eps=self.epsilon)
            u = _l2_normalize(v @ matrix, eps=self.epsilon)
        u, v = lax.stop_gradient(u), lax.stop_gradient(v)
        sigma = (v @ matrix @ u.T)[0, 0]
        matrix = matrix / jnp.where(sigma != 0, sigma, 1)
        if update_stats:
            u_stat[...] = u
            sigma_stat[...] = sigma
        dtype = dtypes.canonicalize_dtype(weight, u, v, sigma, dtype=self.dtype)
        return jnp.asarray(jnp.reshape(matrix, weight.shape), dtype)


class WeightNorm(Module):
    """Wraps a layer and rescales the selected weights to unit L2 norm (times ``scales``) before each call."""

    def __init__(
        self,
        layer_instance: Module,
        *,
        feature_axes: Axes | None = -1,
        use_scale: bool = True,
        scale_init: Initializer = initializers.ones,
        epsilon: float = 1e-12,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        variable_filter: tp.Any = None,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
    ):
        if variable_filter is None:
            variable_filter = PathContains("kernel", exact=True)
        self.layer_instance = layer_instance
        self.feature_axes = feature_axes
        self.use_scale = use_scale
        self.scale_init = scale_init
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.variable_filter = variable_filter
        self.promote_dtype = promote_dtype
        scales = {}
        if use_scale:
            for path, param in self._selected():
                shape = tuple(param.shape[a] for a in self._feature_axes(param[...].ndim))
                # The initializer gets the ``params`` stream itself (no key is drawn)
                # and no dtype: the scales keep the initializer's default, as in flax.
                scales[path] = Param(scale_init(rngs["params"], shape))
        self.scales = data(scales)

    def _selected(self) -> list[tuple[tuple, tp.Any]]:
        return _variables_of(self.layer_instance, self.variable_filter)

    def _feature_axes(self, ndim: int) -> tuple[int, ...]:
        if self.feature_axes is None:
            return ()
        return canonicalize_axes(ndim, self.feature_axes)

    def __call__(self, x, *args, **kwargs):
        for path, param in self._selected():
            weight = param[...]
            feature_axes = self._feature_axes(weight.ndim)
            reduction_axes = tuple(i for i in range(weight.ndim) if i not in feature_axes)
            # Normalized in the weight's own precision, scaled, cast to ``dtype`` last;
            # the weight takes the dtype of the result.
            normed = _l2_normalize(weight, axis=reduction_axes, eps=self.epsilon)
            if self.use_scale:
                shape = tuple(d if i in feature_axes else 1 for i, d in enumerate(weight.shape))
                normed = normed * jnp.reshape(self.scales[path][...], shape)
            (normed,) = self.promote_dtype((normed,), dtype=self.dtype)
            param.set_value(normed)
        return self.layer_instance(x, *args, **kwargs)
