"""Unflattening: a root definition and its leaves back to objects, reusing known ones."""

from __future__ import annotations

import typing as tp

import jax

from .. import _structure
from .._tracing import current_trace_state
from ..pytreelib import NODES, TRACE_STATE
from ..statelib import FlatState, iter_flat_state
from ..variablelib import Variable
from ._defs import (
    ArrayRefDef,
    ContainerDef,
    Definition,
    LeafDef,
    NodeDef,
    NodeRef,
    RootDefinition,
    StaticDef,
    TreeDef,
    VariableDef,
    VariableRef,
)
from ._nodes import Key, PathParts


class _UnflattenContext:
    """Where the leaves come from: a path -> leaf mapping, or an iterator of leaves in
    flatten order; ``recreate`` wraps a plain leaf at a Variable's place in a Variable."""

    def __init__(
        self,
        leaves: dict[PathParts, tp.Any] | tp.Iterator[tp.Any],
        index_ref: dict[int, tp.Any] | None,
        copy: bool,
        recreate: bool = True,
    ) -> None:
        self.leaves = leaves
        self.index_ref: dict[int, tp.Any] = {} if index_ref is None else index_ref
        self.copy = copy
        self.recreate = recreate

    def leaf(self, path: PathParts) -> tp.Any:
        leaves = self.leaves
        if not isinstance(leaves, dict):
            return next(leaves)
        if path not in leaves:
            raise ValueError(f"The state has no leaf at path {path} that the GraphDef expects.")
        return leaves[path]


def _graph_unflatten(d: Definition, path: PathParts, ctx: _UnflattenContext) -> tp.Any:
    if isinstance(d, (VariableRef, NodeRef)):
        return ctx.index_ref[d.index]
    if isinstance(d, VariableDef):
        leaf = ctx.leaf(path)
        existing = ctx.index_ref.get(d.index)
        if isinstance(leaf, Variable):
            if existing is not None and existing is not leaf:
                existing.update_from_state(leaf)
                return existing
            variable = leaf.copy() if ctx.copy else leaf
        elif not ctx.recreate:
            variable = leaf
        elif existing is not None:
            existing.set_raw_value(leaf)
            return existing
        else:
            variable = d.type._new(leaf, {k: s.value for k, s in d.metadata})
        ctx.index_ref[d.index] = variable
        return variable
    if isinstance(d, NodeDef):
        node = ctx.index_ref.get(d.index)
        if node is None:
            node = object.__new__(d.type)
            object.__setattr__(node, TRACE_STATE, current_trace_state())
            ctx.index_ref[d.index] = node
        values: dict[Key, tp.Any] = {}
        status: dict[Key, bool] = {}
        for key, data, child in d.attributes:
            status[key] = data
            values[key] = _graph_unflatten(child, (*path, key), ctx) if data else child.value
        _structure.touched(node)
        internals = {k: v for k, v in vars(node).items() if isinstance(k, str) and k.startswith("_pytree__")}
        node.__dict__.clear()
        node.__dict__.update(internals)
        object.__setattr__(node, NODES, status)
        node.__dict__.update(values)
        return node
    if isinstance(d, ContainerDef):
        children = [_graph_unflatten(child, (*path, key), ctx) for key, child in d.children]
        return jax.tree_util.tree_unflatten(d.treedef, children)
    if isinstance(d, ArrayRefDef):
        ctx.index_ref[d.index] = ctx.leaf(path)
        return ctx.index_ref[d.index]
    if isinstance(d, LeafDef):
        return ctx.leaf(path)
    if isinstance(d, StaticDef):
        return d.value
    raise TypeError(f"Unknown node definition {d!r} at path {path}")


def collect_leaves(states: tp.Sequence[tp.Any]) -> list[tuple[PathParts, tp.Any]]:
    """The ``(path, leaf)`` pairs of the states, in their own order (not sorted)."""
    leaves: list[tuple[PathParts, tp.Any]] = []
    for s in states:
        if isinstance(s, FlatState):
            leaves.extend(s)
        elif isinstance(s, tp.Mapping):
            leaves.extend(iter_flat_state(s))
        elif isinstance(s, Variable):
            leaves.append(((), s))
        else:
            raise TypeError(f"Expected a State or FlatState, got {type(s).__name__}: {s!r}")
    return leaves


def from_leaves(
    root: RootDefinition,
    leaves: list[tuple[PathParts, tp.Any]],
    index_ref: dict[int, tp.Any] | None,
    copy: bool,
    recreate: bool = True,
) -> tp.Any:
    """The object ``root`` describes, each leaf found by its path (a plain leaf at a
    Variable's place kept as it is unless ``recreate``)."""
    by_path = dict(leaves)
    if isinstance(root, TreeDef):
        missing = [p for p in root.paths if p not in by_path]
        if missing:
            raise ValueError(f"The state has no leaf at path {missing[0]} that the GraphDef expects.")
        return from_values(root, [by_path[p] for p in root.paths], index_ref, copy)
    return _graph_unflatten(root, (), _UnflattenContext(by_path, index_ref, copy, recreate))


def from_values(root: RootDefinition, values: list[tp.Any], index_ref: dict[int, tp.Any] | None, copy: bool) -> tp.Any:
    """The object ``root`` describes, its leaves given in flatten order."""
    if isinstance(root, TreeDef):
        if copy:
            values = [v.copy() if isinstance(v, Variable) else v for v in values]
        values = [v if t is None else t.wrap(v) for v, t in zip(values, root.templates)]
        return jax.tree_util.tree_unflatten(root.treedef, values)
    return _graph_unflatten(root, (), _UnflattenContext(iter(values), index_ref, copy))
