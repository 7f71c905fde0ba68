"""The pure functions that the loop transforms hand to ``jax.lax``, one per user function
and input structure.

``jax.lax`` caches a traced body by the function it is given; building a new closure
on every call would retrace the body every time. Here each pure function is kept
per user function (weakly: the cache never keeps a function alive) and per hashable
key of structure, and reaches the user function through a weak reference.
"""

from __future__ import annotations

import typing as tp
import weakref

from .. import graphlib
from ._trees import reported_as

_MAX_PER_FUNCTION = 64
"""Structures remembered per user function; past this they are rebuilt as they come."""

_PURE: weakref.WeakKeyDictionary[tp.Callable[..., tp.Any], dict[tp.Hashable, tp.Callable[..., tp.Any]]]
_PURE = weakref.WeakKeyDictionary()


def pure_function(
    fun: tp.Callable[..., tp.Any],
    key: tp.Hashable,
    build: tp.Callable[[tp.Callable[..., tp.Any]], tp.Callable[..., tp.Any]],
) -> tp.Callable[..., tp.Any]:
    """``build(call)``, made once per ``fun`` and ``key``; ``call`` calls ``fun``."""
    try:
        per_key = _PURE.setdefault(fun, {})
    except TypeError:  # not weakly referable or not hashable: nothing to cache by
        return build(fun)
    with graphlib.hashing_for_caches():
        found = per_key.get(key)
    if found is None:
        if len(per_key) >= _MAX_PER_FUNCTION:
            per_key.clear()
        reference = weakref.ref(fun)

        def call(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            return reference()(*args, **kwargs)  # type: ignore[misc]

        found = build(reported_as(fun, call))
        with graphlib.hashing_for_caches():
            per_key[key] = found
    return found
