"""Dropout."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp
from jax import lax

from .. import rnglib
from ..module import Module
from ..pytreelib import data
from .flags import first_from, missing_flag_message

__all__ = ["Dropout"]


def _stream(rngs: rnglib.Rngs, name: str, by_key: bool) -> rnglib.RngStream:
    """The stream ``name`` of ``rngs``: ``rngs[name]`` (a missing one is a KeyError) with
    ``by_key``, else ``rngs.name`` (an AttributeError), as each flax layer looks it up."""
    return rngs[name] if by_key else getattr(rngs, name)


def fork_stream(rngs, name: str, *, by_key: bool = False):
    """Forks the stream ``name`` of an ``Rngs`` (or the given ``RngStream``) for a layer to keep."""
    if isinstance(rngs, rnglib.Rngs):
        return _stream(rngs, name, by_key).fork()
    if isinstance(rngs, rnglib.RngStream):
        return rngs.fork()
    if rngs is None:
        return None
    raise TypeError(f"rngs must be a Rngs, RngStream or None, but got {type(rngs)}.")


def draw_key(rngs, name: str, *, by_key: bool = False) -> jax.Array:
    """Draws one key from an ``Rngs`` (stream ``name``), an ``RngStream``, or returns a raw key."""
    if isinstance(rngs, rnglib.Rngs):
        return _stream(rngs, name, by_key)()
    if isinstance(rngs, rnglib.RngStream):
        return rngs()
    if isinstance(rngs, jax.Array):
        return rngs
    raise TypeError(f"rngs must be a Rngs, RngStream or jax.Array, but got {type(rngs)}.")


class Dropout(Module):
    """Zeroes inputs with probability ``rate`` and rescales the rest by ``1 / (1 - rate)``."""

    def __init__(
        self,
        rate: float,
        *,
        broadcast_dims: tp.Sequence[int] = (),
        deterministic: bool | None = False,
        rng_collection: str = "dropout",
        rngs=None,
    ):
        self.rate = rate
        self.broadcast_dims = tuple(broadcast_dims)
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        self.rngs = data(fork_stream(rngs, rng_collection, by_key=True))  # data even when None, as flax

    def __call__(self, inputs, *, deterministic: bool | None = None, rngs=None) -> jax.Array:
        deterministic = first_from(
            deterministic,
            self.deterministic,
            error_msg=missing_flag_message("deterministic", "Dropout", "dropout"),
        )
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = rngs if rngs is not None else self.rngs
        if rngs is None:
            raise ValueError(
                "`deterministic` is False, but no `rngs` argument was provided to "
                "Dropout as either a __call__ argument or class attribute."
            )
        key = draw_key(rngs, self.rng_collection, by_key=True)
        keep_prob = 1.0 - self.rate
        mask_shape = list(inputs.shape)
        for dim in self.broadcast_dims:  # negative dims count from the last axis, as in flax
            mask_shape[dim] = 1
        keep = jnp.broadcast_to(jax.random.bernoulli(key, p=keep_prob, shape=mask_shape), inputs.shape)
        return lax.select(keep, inputs / keep_prob, jnp.zeros_like(inputs))

    def set_view(self, deterministic: bool | None = None) -> None:
        """Sets the mode ``nnx.view`` asks for: no dropout (eval) or dropout (train).

        Args:
          deterministic: if True, disables dropout masking.
        """
        if deterministic is not None:
            self.deterministic = deterministic
