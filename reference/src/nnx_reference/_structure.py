"""A count of changes to the structure of watched Pytrees, for caches of flattened calls.

A cache that keeps the flattened structure of some Pytrees marks them as watched
(:func:`watch`). Whatever changes the attributes of a watched Pytree, or the metadata
of any Variable, calls :func:`changed` (or :func:`touched`); a cache filled at another
:data:`epoch` is stale.
"""

from __future__ import annotations

import typing as tp

WATCHED = "_pytree__watched"
"""The instance attribute that marks a watched Pytree (internal: never part of the tree)."""

epoch = 0
"""How many structural changes there have been so far."""


def changed() -> None:
    """Records a structural change: every cache of flattened structure is stale."""
    global epoch
    epoch += 1


def watch(node: tp.Any) -> None:
    """Marks a Pytree whose structure a cache keeps: changes to its attributes count."""
    object.__setattr__(node, WATCHED, True)


def touched(node: tp.Any) -> None:
    """Records a change to the attributes of ``node`` (a Pytree), if it is watched."""
    if WATCHED in node.__dict__:
        changed()
