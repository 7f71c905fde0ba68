"""Type aliases and the empty-metadata default shared by the layer modules."""

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
