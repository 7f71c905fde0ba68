"""A count of changes to the structure of watched Pytrees, for caches of flattened calls.

A cache that keeps the flattened structure of some Pytrees marks them as watched
(:func:`watch`). Whatever changes the attributes of a watched Pytree, or the metadata
of any Variable, calls :func:`changed` (or :func:`touched`); a cache filled at another
:data:`epoch` is stale if one of the latest changes was made to a mapping it holds
(:func:`changed_since`). Where the interpreter reports every change to a dict
(:mod:`._dict_watchers`), a change made without ``__setattr__`` to a watched Pytree's
attributes or a watched metadata mapping counts too: then :data:`every_change_counted`.
"""

from __future__ import annotations

import collections
import itertools
import typing as tp

from . import _dict_watchers

WATCHED = "_pytree__watched"
"""The instance attribute that marks a watched Pytree (internal: never part of the tree)."""

epoch = 0
"""How many structural changes there have been so far."""

_RECENT = 256
"""Changes whose mapping is remembered: a cache older than these compares all it holds."""

_recent: collections.deque[int | None] = collections.deque(maxlen=_RECENT)
"""The ids of the mappings the latest changes were made to, the latest last (None: unknown)."""


def changed(mapping: tp.Any = None) -> None:
    """Records a structural change, to ``mapping`` (a Pytree's attribute dict or a Variable's
    metadata) where given: a cache of flattened structure that holds it is stale."""
    _record(None if mapping is None else id(mapping))


def _record(address: int | None) -> None:
    global epoch
    epoch += 1
    _recent.append(address)


def changed_since(then: int, mappings: tp.AbstractSet[int]) -> bool:
    """Whether a change since epoch ``then`` may have been made to one of the mappings whose ids are ``mappings``."""
    count = epoch - then
    if count == 0:
        return False
    if count > len(_recent):
        return True
    return any(found is None or found in mappings for found in itertools.islice(reversed(_recent), count))


_WATCHER = _dict_watchers.watcher(_record)

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
        changed(node.__dict__)
