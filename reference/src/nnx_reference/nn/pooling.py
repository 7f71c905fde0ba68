"""Pooling over spatial windows with ``lax.reduce_window`` (channels-last inputs)."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp
from jax import lax

from .axes import flatten_batch, restore_batch

__all__ = ["avg_pool", "max_pool", "min_pool", "pool"]

Padding = str | tp.Sequence[tuple[int, int]]


def pool(inputs, init, reduce_fn, window_shape, strides, padding):
    """Reduces ``inputs`` over windows of ``window_shape`` with ``reduce_fn``.

    ``inputs`` is ``(batch..., window dims..., features)``; with no batch dimension
    one is added and removed again, with several they are flattened into one.
    """
    strides = strides or (1,) * len(window_shape)
    assert len(window_shape) == len(strides), f"len({window_shape}) must equal len({strides})"
    strides = (1,) + tuple(strides) + (1,)
    dims = (1,) + tuple(window_shape) + (1,)
    if not isinstance(padding, str) and inputs.ndim > len(dims):
        raise ValueError(
            f"explicit padding {padding} takes inputs with at most one batch axis, "
            f"got inputs of shape {inputs.shape} for window_shape {window_shape}"
        )
    inputs, batch_shape = flatten_batch(inputs, len(window_shape))
    assert inputs.ndim == len(dims), f"len({inputs.shape}) != len({dims})"
    if not isinstance(padding, str):
        padding = tuple(map(tuple, padding))
        assert len(padding) == len(window_shape), (
            f"padding {padding} must specify pads for same number of dims as window_shape {window_shape}"
        )
        assert all(len(pair) == 2 for pair in padding), f"each entry in padding {padding} must be length 2"
        padding = ((0, 0),) + padding + ((0, 0),)
    y = lax.reduce_window(inputs, init, reduce_fn, dims, strides, padding)
    return restore_batch(y, batch_shape)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    """Averages over each window; ``count_include_pad=False`` leaves padding out of the count."""
    y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        return y / jnp.prod(jnp.asarray(window_shape))
    counts = pool(jnp.ones(inputs.shape[:-1] + (1,)), 0.0, lax.add, window_shape, strides, padding)
    return y / counts


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    """Takes the maximum over each window."""
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    """Takes the minimum over each window."""
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)
