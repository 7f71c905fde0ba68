"""Activation functions (JAX's own, re-exported) and the learnable ``PReLU``."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp
from jax.nn import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    standardize,
    swish,
)
from jax.numpy import tanh

from ..module import Module
from ..variablelib import Param
from . import dtypes
from .aliases import NO_METADATA, Metadata

__all__ = [
    "PReLU",
    "celu",
    "elu",
    "gelu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "standardize",
    "swish",
    "tanh",
]


class PReLU(Module):
    """Leaky ReLU whose negative slope is a learned scalar ``Param``."""

    def __init__(
        self,
        negative_slope_init: float = 0.01,
        *,
        dtype: tp.Any = None,
        param_dtype: tp.Any = jnp.float32,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        negative_slope_metadata: Metadata = NO_METADATA,
    ):
        self.negative_slope = Param(jnp.asarray(negative_slope_init, dtype=param_dtype), **negative_slope_metadata)
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs):
        """``inputs`` where non-negative, else ``slope * inputs``; with ``dtype`` set, both
        are cast by ``promote_dtype``, else the slope takes the inputs' dtype."""
        if self.dtype is None:
            slope = jnp.asarray(self.negative_slope[...], inputs.dtype)
        else:
            inputs, slope = self.promote_dtype((inputs, self.negative_slope[...]), dtype=self.dtype)
        return jnp.where(inputs >= 0, inputs, slope * inputs)
