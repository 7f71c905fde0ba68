"""A count of changes to the structure of watched Pytrees, for caches of flattened calls.

A cache that keeps the flattened structure of some Pytrees marks them as watched
(:func:`watch`). Whatever changes the attributes of a watched Pytree, or the metadata
of any Variable, calls :func:`changed` (or :func:`touched`); a cache filled at another
:data:`epoch` is stale. Where the interpreter reports every change to a dict
(:mod:`._dict_watchers`), a change made without ``__setattr__`` to a watched Pytree's
attributes or a watched metadata mapping counts too: then :data:`every_change_counted`.
"""

from __future__ import annotations

import typing as tp

from . import _dict_watchers

WATCHED = "_pytree__watched"
"""The instance attribute that marks a watched Pytree (internal: never part of the tree)."""

epoch = 0
"""How many structural changes there have been so far."""


def changed() -> None:
    """Records a structural change: every cache of flattened structure is stale."""
    global epoch
    epoch += 1


_WATCHER = _dict_watchers.watcher(changed)

every_change_counted = _WATCHER is not None
"""Whether every change to a watched Pytree's attributes or a watched mapping counts,
however made (else only those made through ``__setattr__`` and the mappings' methods)."""


def watch(node: tp.Any) -> None:
    """Marks a Pytree whose structure a cache keeps: changes to its attributes count."""
    object.__setattr__(node, WATCHED, True)
    watch_mapping(vars(node))


def watch_mapping(mapping: dict[tp.Any, tp.Any]) -> None:
    """Counts every later change to ``mapping`` (a Variable's metadata), where changes are reported."""
    if _WATCHER is not None:
        _WATCHER.watch(mapping)


def touched(node: tp.Any) -> None:
    """Records a change to the attributes of ``node`` (a Pytree), if it is watched."""
    if WATCHED in node.__dict__:
        changed()
