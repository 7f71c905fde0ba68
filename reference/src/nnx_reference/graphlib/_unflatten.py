"""Unflattening: a root definition and its leaves back to objects, reusing known ones."""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Reuse:
    """Which existing objects an unflatten rebuilds in place: those of ``outer`` (outer
    index -> object, as ``unflatten``'s ``outer_index_outer_ref``) and, if ``in_place``,
    those already in its ``index_ref`` (a transform's bookkeeping). Without ``in_place``
    an index_ref entry at a Variable's index is replaced, at a node's a RuntimeError."""

    outer: dict[int, tp.Any] | None = None
    in_place: bool = True


class _UnflattenContext:
    """Where the leaves come from: a path -> leaf mapping, or an iterator of leaves in
    flatten order; ``recreate`` wraps a plain leaf at a Variable's place in a Variable."""

    def __init__(
        self,
        leaves: dict[PathParts, tp.Any] | tp.Iterator[tp.Any],
        index_ref: dict[int, tp.Any] | None,
        copy: bool,
        recreate: bool = True,
        reuse: Reuse = Reuse(),
    ) -> None:
        self.leaves = leaves
        self.index_ref: dict[int, tp.Any] = {} if index_ref is None else index_ref
        self.copy = copy
        self.recreate = recreate
        self.reuse = reuse

    def leaf(self, path: PathParts) -> tp.Any:
        leaves = self.leaves
        if not isinstance(leaves, dict):
            return next(leaves)
        if path not in leaves:
            raise ValueError(f"The state has no leaf at path {path} that the GraphDef expects.")
        return leaves[path]

    def _outer(self, d: VariableDef | NodeDef) -> tp.Any:
        outer = self.reuse.outer
        return None if outer is None or d.outer_index is None else outer.get(d.outer_index)

    def existing_variable(self, d: VariableDef) -> tp.Any:
        """The Variable to update in place for ``d``, if any."""
        if self.reuse.in_place and d.index in self.index_ref:
            return self.index_ref[d.index]
        found = self._outer(d)
        if found is not None and not isinstance(found, Variable):
            raise ValueError(f"Expected a Variable type but got {type(found)}.")
        return found

    def existing_node(self, d: NodeDef) -> tp.Any:
        """The node to rebuild in place for ``d``, if any."""
        if d.index in self.index_ref:
            if not self.reuse.in_place:
                raise RuntimeError(f"GraphDef index {d.index} already used.")
            return self.index_ref[d.index]
        found = self._outer(d)
        if found is not None and type(found) is not d.type:
            raise ValueError(
                f"Expected a node of type {d.type} for index {d.index}, but got a node of type {type(found)}."
            )
        return found


def _take_metadata(variable: Variable[tp.Any], d: VariableDef) -> None:
    """Gives an existing Variable the metadata its definition records, where it differs
    (a transform with graph updates that set or deleted metadata)."""
    recorded = {key: static.value for key, static in d.metadata}
    if recorded != dict(variable._var_metadata):
        variable.update_from_state(type(variable)._new(variable.get_raw_value(), recorded))


def _graph_unflatten(d: Definition, path: PathParts, ctx: _UnflattenContext) -> tp.Any:
    if isinstance(d, (VariableRef, NodeRef)):
        return ctx.index_ref[d.index]
    if isinstance(d, VariableDef):
        leaf = ctx.leaf(path)
        existing = ctx.existing_variable(d)
        if existing is not None and existing is not leaf:
            if isinstance(leaf, Variable):
                existing.update_from_state(leaf)
            else:
                existing.set_raw_value(leaf)
                _take_metadata(existing, d)
            variable = existing
        elif isinstance(leaf, Variable):
            variable = leaf.copy() if ctx.copy else leaf
        elif not ctx.recreate:
            variable = leaf
        else:
            variable = d.type._new(leaf, {k: s.value for k, s in d.metadata})
        ctx.index_ref[d.index] = variable
        return variable
    if isinstance(d, NodeDef):
        node = ctx.existing_node(d)
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
    """The ``(path, leaf)`` pairs of the states, in their own order (not sorted); a state
    that is no State is a leaf at the root."""
    leaves: list[tuple[PathParts, tp.Any]] = []
    for s in states:
        if isinstance(s, FlatState):
            leaves.extend(s)
        elif isinstance(s, tp.Mapping):
            leaves.extend(iter_flat_state(s))
        else:  # a Variable, or a plain leaf: the state of a graph that is one leaf
            leaves.append(((), s))
    return leaves


def from_leaves(
    root: RootDefinition,
    leaves: list[tuple[PathParts, tp.Any]],
    index_ref: dict[int, tp.Any] | None,
    copy: bool,
    recreate: bool = True,
    reuse: Reuse = Reuse(),
) -> tp.Any:
    """The object ``root`` describes, each leaf found by its path (a plain leaf at a
    Variable's place kept as it is unless ``recreate``)."""
    by_path = dict(leaves)
    if isinstance(root, TreeDef):
        missing = [p for p in root.paths if p not in by_path]
        if missing:
            raise ValueError(f"The state has no leaf at path {missing[0]} that the GraphDef expects.")
        return from_values(root, [by_path[p] for p in root.paths], index_ref, copy)
    return _graph_unflatten(root, (), _UnflattenContext(by_path, index_ref, copy, recreate, reuse))


def from_values(root: RootDefinition, values: list[tp.Any], index_ref: dict[int, tp.Any] | None, copy: bool) -> tp.Any:
    """The object ``root`` describes, its leaves given in flatten order."""
    if isinstance(root, TreeDef):
        if copy:
            values = [v.copy() if isinstance(v, Variable) else v for v in values]
        values = [v if t is None else t.wrap(v) for v, t in zip(values, root.templates)]
        return jax.tree_util.tree_unflatten(root.treedef, values)
    return _graph_unflatten(root, (), _UnflattenContext(iter(values), index_ref, copy))
