"""A mapped axis moved in Variable metadata, as ``transform_metadata`` asks: its partition
name in ``out_sharding``, and its entry in each other tuple metadata the mapping names."""

from __future__ import annotations

import typing as tp

from .._sharding import PARTITION_NAME
from ..variablelib import Variable
from . import _checks as checks


def is_scanned(prefix: tp.Any) -> bool:
    """Whether an axis prefix entry maps along an axis (an int, not a bool)."""
    return isinstance(prefix, int) and not isinstance(prefix, bool)


def axis_metadata(
    metadata: tp.Mapping[str, tp.Any],
    objects: tp.Iterable[tuple[tp.Any, tp.Any]],
    add: bool,
    every_path: bool = False,
) -> None:
    """Add (leaving a mapped call) or remove (entering it) the mapped axis in Variable metadata.

    Only when ``metadata`` names a ``PARTITION_NAME``; ``objects`` are ``(object, prefix)``.
    Each Variable moves once, or with ``every_path`` once per path ``jax.tree`` takes to it.
    The transforms move the names of their copies of the caller's Variables, so a name
    that cannot be removed leaves the caller's Variables as they were.
    """
    if PARTITION_NAME not in metadata:
        return
    name = metadata[PARTITION_NAME]
    others = {key: entry for key, entry in metadata.items() if key != PARTITION_NAME}
    moves: list[tuple[tuple, Variable, int]] = []
    moved: set[int] = set()
    for obj, prefix in objects:
        for path, var, axis in checks.variable_prefixes(obj, prefix, every_path):
            if is_scanned(axis) and (every_path or id(var) not in moved):
                moved.add(id(var))
                moves.append((path, var, axis))
    for path, var, axis in moves:
        sharding = var.get_metadata().get("out_sharding")
        if sharding if add else sharding is not None:
            var.set_metadata("out_sharding", _moved(path, var, "out_sharding", sharding, axis, name, add))
        for key, entry in others.items():
            if (fields := getattr(var, key, None)) and isinstance(fields, tuple):
                var.set_metadata(key, _moved(path, var, key, fields, axis, entry, add))
        (var.add_axis if add else var.remove_axis)(axis, name)


def _moved(path: tuple, var: Variable, key: str, fields: tp.Iterable, axis: int, entry: tp.Any, add: bool) -> tuple:
    """``fields`` with ``entry`` inserted at ``axis`` (padded with None up to it), or removed
    from there, which must hold ``entry``."""
    moved = list(fields)
    if add:
        moved += [None] * (axis - len(moved))
        moved.insert(axis, entry)
    elif (found := moved.pop(axis)) != entry:
        raise ValueError(
            f"Expected to remove {entry!r} at index {axis} from {fields!r}, but found {found!r}. "
            f"(the {key} of the {type(var).__name__} at path {path})"
        )
    return tuple(moved)
