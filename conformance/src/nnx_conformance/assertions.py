"""Documented error conditions (kind "error"), one module per spec area."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def raises_named(type_name: str, match: str) -> Iterator[pytest.ExceptionInfo[Exception]]:
    """``pytest.raises`` for an exception flax keeps in ``flax.errors`` (``TraceContextError``,
    ``ImmutableVariableError``): ``flax.nnx`` does not export them, so an implementation's
    own class is matched by its name, and its message by ``match``."""
    with pytest.raises(Exception, match=match) as info:
        yield info
    assert type(info.value).__name__ == type_name, f"expected a {type_name}, got {type(info.value).__name__}"
