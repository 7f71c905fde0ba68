"""Metadata a transformed function gave its input Variables, found and written back.

Without graph updates a transform writes back values only where the function assigned
them; flax writes back the metadata the function set or deleted as well. Variables are
compared by their sorted metadata items, the pytree auxiliary data JAX carries for them.
"""

from __future__ import annotations

import typing as tp

from .. import variablelib
from .._variable_metadata import Metadata, same_items, sorted_items

Items = tuple[tuple[str, tp.Any], ...]
"""A Variable's metadata as sorted ``(key, value)`` pairs."""


def new_metadata(
    given: tp.Sequence[variablelib.Variable[tp.Any]], now: tp.Sequence[variablelib.Variable[tp.Any]]
) -> tuple[tuple[int, Items], ...]:
    """``(position, metadata now)`` of each Variable of ``now`` whose metadata differs from
    that of the Variable at its position in ``given`` (the call's inputs as they came in)."""
    before = [sorted_items(v._var_metadata) for v in given]
    after = [sorted_items(v._var_metadata) for v in now]
    return tuple((i, items) for i, (old, items) in enumerate(zip(before, after)) if not same_items(old, items))


def replace_metadata(variable: variablelib.Variable[tp.Any], items: tp.Iterable[tuple[str, tp.Any]]) -> None:
    """Gives ``variable`` exactly the metadata ``items`` (set and deleted entries alike)."""
    object.__setattr__(variable, "_var_metadata", Metadata(dict(items)))
