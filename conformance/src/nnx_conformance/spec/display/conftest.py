"""Fixtures the display tests share."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest


def _derived(roots: list[type]) -> list[type]:
    """The classes ``roots`` and every class derived from them that is loaded now, each once."""
    found: dict[type, None] = {}
    stack = list(roots)
    while stack:
        cls = stack.pop()
        if cls not in found:
            found[cls] = None
            stack.extend(cls.__subclasses__())
    return list(found)


def _restore(cls: type, attributes: dict[str, Any]) -> None:
    """Gives ``cls`` back the own attributes it had (``attributes``) where a function was set
    on it since, in place of one of them or of none. Other attributes (a cache a class fills
    when first used) are left as they are."""
    for name in set(vars(cls)) | set(attributes):
        now, then = vars(cls).get(name, _NONE), attributes.get(name, _NONE)
        if now is not then and inspect.isfunction(now):
            if then is _NONE:
                delattr(cls, name)
            else:
                setattr(cls, name, then)


_NONE = object()


@pytest.fixture(autouse=True)
def pytree_classes_restored(request: pytest.FixtureRequest, nnx: Any) -> Iterator[None]:
    """Gives the Pytree classes of flax.nnx and of the implementation under test back their own
    attributes after each display test. flax 0.12.12's tabulate writes the public methods of
    each class it tabulates into that class's own dict (left wrapped when it raises), so that a
    later ``nnx.capture(..., method_outputs=...)`` of the class recurses without end, and a hook
    left on RngStream breaks every later Rngs call (flax.txt lists the departure): the later
    tests and doc pages of a one-process run find the classes as they were."""
    implementations = [nnx]
    if "flax_nnx" in request.fixturenames:
        implementations.append(request.getfixturevalue("flax_nnx").nnx)
    roots = [root for root in (getattr(i, "Pytree", None) for i in implementations) if isinstance(root, type)]
    saved = {cls: dict(vars(cls)) for cls in _derived(roots)}
    yield
    for cls, attributes in saved.items():
        _restore(cls, attributes)
