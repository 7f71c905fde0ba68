"""Type aliases, the empty-metadata default and the optional-Variable reader shared by the layer modules."""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax

__all__: list[str] = []

Array = jax.Array
Dtype = tp.Any
Metadata = tp.Mapping[str, tp.Any]
Shape = tuple[int, ...]
NO_METADATA: Metadata = MappingProxyType({})


def optional_value(variable: tp.Any) -> Array | None:
    """The value of an optional Variable (a bias or scale a layer may leave out), else None."""
    return variable[...] if variable is not None else None
