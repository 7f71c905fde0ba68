"""Weight-rescaling wrappers: spectral and weight normalization of a wrapped layer's parameters."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp
from jax import lax

from .. import graphlib
from ..filterlib import PathContains
from ..module import Module
from ..pytreelib import data
from ..statelib import to_flat_state
from ..variablelib import BatchStat, Param
from . import dtypes, initializers
from .aliases import Array, Dtype
from .axes import Axes, canonicalize_axes
from .initializers import Initializer

__all__ = ["SpectralNorm", "WeightNorm"]


def _variables_of(layer: Module, variable_filter: tp.Any) -> list[tuple[tuple, tp.Any]]:
    """The Variables of ``layer`` that ``variable_filter`` selects, in the state's path order."""
    return [(tuple(path), v) for path, v in to_flat_state(graphlib.state(layer, variable_filter))]


def _matrices_of(layer: Module) -> list[tuple[tuple, tp.Any]]:
    """The ``Param``s of ``layer`` with two or more dimensions (those SpectralNorm rescales)."""
    return [(path, p) for path, p in _variables_of(layer, Param) if p[...].ndim > 1]


def _l2_normalize(x: Array, axis: int | tuple[int, ...] | None = None, *, eps: float) -> Array:
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
        for path, param in _matrices_of(layer_instance) if n_steps >= 1 else ():  # no estimate, no statistics
            value = self._as_matrix(param[...])
            batch_stats[path + ("u",)] = BatchStat(
                initializers.normal()(rngs.params(), (1, value.shape[-1]), param_dtype)
            )
            batch_stats[path + ("sigma",)] = BatchStat(jnp.ones((), param_dtype))
        self.batch_stats = data(batch_stats)

    def _as_matrix(self, value: Array) -> Array:
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(f"Layer instance parameter is {value.ndim}D but error_on_non_matrix is True")
            value = jnp.reshape(value, (-1, value.shape[-1]))
        return value

    def _statistic(self, path: tuple, name: str) -> tp.Any:
        """The ``name`` BatchStat of the weight at ``path``; flax's RuntimeError for a weight
        the wrapped layer gained after construction."""
        if path + (name,) not in self.batch_stats:
            raise RuntimeError(
                f"Could not find the path for {name} batch stat corresponding to the param {path} "
                "in the batch stats dict. Parameters of the layer_instance should not change!"
            )
        return self.batch_stats[path + (name,)]

    def __call__(self, x, update_stats: bool | None = None):
        update_stats = not self.use_running_average if update_stats is None else update_stats
        for path, param in _matrices_of(self.layer_instance):
            param[...] = self._normalize(path, param[...], update_stats)
        return self.layer_instance(x)

    def _normalize(self, path: tuple, weight: Array, update_stats: bool) -> Array:
        if self.n_steps < 1:
            return weight
        matrix = self._as_matrix(weight)
        u_stat, sigma_stat = self._statistic(path, "u"), self._statistic(path, "sigma")
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
        self.feature_axes = () if feature_axes is None else feature_axes
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
        self.scales = data(scales) if use_scale else None

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
                if path not in self.scales:
                    raise RuntimeError(
                        f"Could not find the scale corresponding to the param {path} in scales dict. "
                        "Parameters of the layer_instance should not change!"
                    )
                shape = tuple(d if i in feature_axes else 1 for i, d in enumerate(weight.shape))
                normed = normed * jnp.reshape(self.scales[path][...], shape)
            (normed,) = self.promote_dtype((normed,), dtype=self.dtype)
            param.set_value(normed)
        return self.layer_instance(x, *args, **kwargs)
