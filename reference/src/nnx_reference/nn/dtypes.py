"""Dtype helpers shared by the layers: pick a computation dtype, cast arrays to it."""

from __future__ import annotations

import typing as tp

import jax.numpy as jnp

Dtype = tp.Any
T = tp.TypeVar("T", bound=tuple)

__all__ = ["canonicalize_dtype", "promote_dtype"]


def canonicalize_dtype(*args, dtype: Dtype | None = None, inexact: bool = True) -> Dtype:
    """Returns the dtype a computation over ``args`` should use.

    An explicit ``dtype`` wins; otherwise the arguments' dtypes are promoted together
    (``None`` arguments are ignored). With ``inexact=True`` an integer result is
    promoted to a floating dtype, and an explicit integer ``dtype`` is an error.
    """
    if dtype is None:
        present = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*present)
        if inexact and not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.promote_types(jnp.float32, dtype)
    if inexact and not jnp.issubdtype(dtype, jnp.inexact):
        raise ValueError(f"Dtype must be inexact: {dtype}")
    return dtype


def promote_dtype(args: T, /, *, dtype: Dtype | None = None, inexact: bool = True) -> T:
    """Casts every array of the tuple ``args`` to one common dtype (``None`` stays ``None``)."""
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return tuple(jnp.asarray(x, dtype) if x is not None else None for x in args)  # type: ignore[return-value]
