"""Axis and batch-shape helpers shared by the layers (linear, convolution, pooling, normalization)."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp

from .aliases import Array

Axes = int | tp.Sequence[int]


def canonicalize_axes(rank: int, axes: Axes) -> tuple[int, ...]:
    """``axes`` of an array of ``rank`` dimensions as sorted, distinct, non-negative axes."""
    if not isinstance(axes, tp.Iterable):
        axes = (axes,)
    return tuple(sorted({rank + a if a < 0 else a for a in axes}))


def flatten_batch(inputs: Array, num_spatial: int) -> tuple[Array, tuple[int, ...]]:
    """Gives ``inputs`` (batch..., spatial..., features) exactly one batch axis; returns it
    with the original batch shape, for :func:`restore_batch`."""
    num_batch = inputs.ndim - (num_spatial + 1)
    batch_shape = inputs.shape[:num_batch]
    if num_batch != 1:
        inputs = jnp.reshape(inputs, (-1,) + inputs.shape[num_batch:])
    return inputs, batch_shape


def restore_batch(y: Array, batch_shape: tuple[int, ...]) -> Array:
    """``y`` with the batch shape :func:`flatten_batch` took away."""
    if len(batch_shape) != 1:
        y = jnp.reshape(y, batch_shape + y.shape[1:])
    return y
