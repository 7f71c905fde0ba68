"""Snapshots of Module graphs taken by plain attribute access, to compare graphs.

A snapshot maps every path of a graph to what is found there: a node's type, a
Variable's type, dtype, shape, values and metadata, a static value, or a reference to
the path where a shared object was first seen. It uses no graph API of the
implementation (no split, state or iter_graph), so the laws about those functions can
compare their results with it without assuming what they test. Two snapshots are compared
by the suite's one comparison, ``describe.difference``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

Path = tuple[Any, ...]


class VariableEntry(NamedTuple):
    """What a snapshot records of a Variable."""

    type: type
    dtype: str
    shape: tuple[int, ...]
    values: Any
    metadata: dict[str, Any]


class NodeEntry(NamedTuple):
    """What a snapshot records of a graph node (Module, Pytree, container)."""

    type: type


class SharedEntry(NamedTuple):
    """A second reference to a node or Variable first seen at ``first_path``."""

    first_path: Path


class StaticEntry(NamedTuple):
    """A static (non-array, non-node) attribute value."""

    value: Any


Snapshot = dict[Path, Any]


def variable_entry(variable: Any) -> VariableEntry:
    """The snapshot entry of one Variable."""
    array = np.asarray(variable[...])
    return VariableEntry(type(variable), str(array.dtype), array.shape, array.tolist(), dict(variable.get_metadata()))


def walk(nnx: Any, root: Any) -> tuple[Snapshot, dict[Path, Any]]:
    """The snapshot of the graph under ``root`` (depth-first, sorted attribute names)
    and its distinct Variables and nodes by the path where they are first seen."""
    entries: Snapshot = {}
    objects: dict[Path, Any] = {}
    seen: dict[int, Path] = {}

    def visit(obj: Any, path: Path) -> None:
        if isinstance(obj, (nnx.Variable, nnx.Pytree)):
            if id(obj) in seen:
                entries[path] = SharedEntry(seen[id(obj)])
                return
            seen[id(obj)] = path
            objects[path] = obj
        if isinstance(obj, nnx.Variable):
            entries[path] = variable_entry(obj)
        elif isinstance(obj, nnx.List):
            entries[path] = NodeEntry(type(obj))
            for index, item in enumerate(obj):
                visit(item, (*path, index))
        elif isinstance(obj, nnx.Dict):
            entries[path] = NodeEntry(type(obj))
            for key in sorted(obj.keys()):
                visit(obj[key], (*path, key))
        elif isinstance(obj, nnx.Pytree):
            entries[path] = NodeEntry(type(obj))
            for name in sorted(name for name in vars(obj) if not name.startswith("_")):
                visit(vars(obj)[name], (*path, name))
        elif isinstance(obj, (tuple, list)) and any(isinstance(item, (nnx.Variable, nnx.Pytree)) for item in obj):
            entries[path] = NodeEntry(type(obj))
            for index, item in enumerate(obj):
                visit(item, (*path, index))
        elif isinstance(obj, dict):
            entries[path] = NodeEntry(dict)
            for key in sorted(obj):
                visit(obj[key], (*path, key))
        else:
            entries[path] = StaticEntry(obj)

    visit(root, ())
    return entries, objects


def snapshot(nnx: Any, root: Any) -> Snapshot:
    """Every path of the graph under ``root`` and what is there."""
    return walk(nnx, root)[0]


def variables_by_path(nnx: Any, root: Any) -> dict[Path, Any]:
    """The distinct Variables under ``root`` by the path where they are first seen."""
    return {path: obj for path, obj in walk(nnx, root)[1].items() if isinstance(obj, nnx.Variable)}


def modules_by_path(nnx: Any, root: Any) -> dict[Path, Any]:
    """The distinct Modules under ``root`` (the root included) by first path."""
    return {path: obj for path, obj in walk(nnx, root)[1].items() if isinstance(obj, nnx.Module)}


def state_snapshot(nnx: Any, state: Any) -> Snapshot:
    """Every leaf path of a State (a nested Mapping) and what is there, in sorted order."""
    entries: Snapshot = {}

    def visit(obj: Any, path: Path) -> None:
        if isinstance(obj, nnx.Variable):
            entries[path] = variable_entry(obj)
        elif isinstance(obj, Mapping):
            for key in sorted(obj, key=repr):
                visit(obj[key], (*path, key))
        else:
            array = np.asarray(obj)
            entries[path] = StaticEntry((str(array.dtype), array.tolist()))

    visit(state, ())
    return entries


def expected_groups(
    nnx: Any, variables: dict[Path, Any], filters: tuple[Any, ...]
) -> tuple[list[set[Path]], set[Path]]:
    """Which group of ``split(node, *filters)`` each Variable path belongs to: the first
    filter that matches it (filters guide); and the paths no filter matches."""
    predicates = [nnx.filterlib.to_predicate(f) for f in filters]
    groups: list[set[Path]] = [set() for _ in filters]
    unmatched: set[Path] = set()
    for path, variable in variables.items():
        index = next((i for i, predicate in enumerate(predicates) if predicate(path, variable)), None)
        (unmatched if index is None else groups[index]).add(path)
    return groups, unmatched
