"""Parameter initializers: JAX's ``jax.nn.initializers`` plus two zero-argument builders.

An initializer is a function ``init(key, shape, dtype) -> Array``.
"""

from __future__ import annotations

import typing as tp

import jax
from jax.nn.initializers import (
    constant,
    delta_orthogonal,
    glorot_normal,
    glorot_uniform,
    he_normal,
    he_uniform,
    kaiming_normal,
    kaiming_uniform,
    lecun_normal,
    lecun_uniform,
    normal,
    ones,
    orthogonal,
    truncated_normal,
    uniform,
    variance_scaling,
    xavier_normal,
    xavier_uniform,
    zeros,
)

DtypeLikeInexact = tp.Any
Initializer = jax.nn.initializers.Initializer | tp.Callable[..., tp.Any]

__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "ones_init",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
    "zeros_init",
]


def zeros_init() -> Initializer:
    """Returns an initializer that fills the array with zeros."""
    return zeros


def ones_init() -> Initializer:
    """Returns an initializer that fills the array with ones."""
    return ones
