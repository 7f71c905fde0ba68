"""Flattening: a graph (or tree) to its root definition and its ``(path, leaf)`` pairs."""

from __future__ import annotations

import typing as tp
from typing import NamedTuple

import jax

from .. import _hijax, reprlib
from .._variable_metadata import sorted_items
from ..pytreelib import Pytree
from ..variablelib import Variable
from ._defs import (
    LEAF,
    ArrayRefDef,
    ContainerDef,
    Definition,
    NodeDef,
    NodeRef,
    RefMap,
    RootDefinition,
    StaticDef,
    TreeDef,
    VariableDef,
    VariableRef,
    VariableTemplate,
)
from ._nodes import PathParts, is_container, jax_key, one_level, pytree_children
from ._tree_check import check_tree


class Flattened(NamedTuple):
    """A graph or tree taken apart: its root definition and its ``(path, leaf)`` pairs in flatten order."""

    root: RootDefinition
    leaves: list[tuple[PathParts, tp.Any]]


class _FlattenContext:
    """One traversal: ``ref_index`` gives objects their (possibly pre-assigned) indices,
    ``visited`` says which were already reached in this traversal (or in earlier ones sharing it),
    ``ref_outer_index`` (if given) gives the objects it holds their outer index."""

    def __init__(self, ref_index: RefMap | None, visited: set[int] | None, ref_outer_index: RefMap | None) -> None:
        self.ref_index = RefMap() if ref_index is None else ref_index
        self.visited: set[int] = set() if visited is None else visited
        self.ref_outer_index = ref_outer_index
        self.leaves: list[tuple[PathParts, tp.Any]] = []

    def seen(self, obj: tp.Any) -> bool:
        return id(obj) in self.visited

    def new_index(self, obj: tp.Any) -> int:
        """The index of ``obj`` (one not in ``ref_index`` yet gets the map's size)."""
        self.visited.add(id(obj))
        if obj not in self.ref_index:
            self.ref_index[obj] = len(self.ref_index)
        return self.ref_index[obj]

    def outer_index(self, obj: tp.Any) -> int | None:
        return None if self.ref_outer_index is None else self.ref_outer_index.get(obj)


def _graph_flatten(node: tp.Any, path: PathParts, ctx: _FlattenContext) -> Definition:
    """Graph mode: the definition of ``node`` at ``path``, its leaves appended to ``ctx``."""
    if isinstance(node, Variable):
        if ctx.seen(node):
            return VariableRef(ctx.ref_index[node])
        index = ctx.new_index(node)
        ctx.leaves.append((path, node))
        metadata = tuple((k, StaticDef(v)) for k, v in node.get_metadata().items())
        return VariableDef(_hijax.class_of(node), index, metadata, ctx.outer_index(node))
    if isinstance(node, Pytree):
        if ctx.seen(node):
            return NodeRef(type(node), ctx.ref_index[node])
        index = ctx.new_index(node)
        attributes = tuple(
            (key, True, _data_attribute(value, (*path, key), ctx)) if data else (key, False, StaticDef(value))
            for key, value, data in pytree_children(node)
        )
        return NodeDef(type(node), index, attributes, ctx.outer_index(node))
    if reprlib.is_ref(node):
        if ctx.seen(node):
            return VariableRef(ctx.ref_index[node])
        ctx.leaves.append((path, node))
        return ArrayRefDef(ctx.new_index(node))
    if reprlib.is_array(node):
        ctx.leaves.append((path, node))
        return LEAF
    if is_container(node):
        children, treedef = one_level(node)
        return ContainerDef(treedef, tuple((key, _graph_flatten(child, (*path, key), ctx)) for key, child in children))
    return StaticDef(node)


def _data_attribute(value: tp.Any, path: PathParts, ctx: _FlattenContext) -> Definition:
    """A Pytree's data attribute or the root: a scalar (any value that is not None, an array, a node
    or a container) is a state leaf of its own; anything else flattens as usual."""
    if value is None or isinstance(value, (Variable, Pytree)) or reprlib.is_array(value) or is_container(value):
        return _graph_flatten(value, path, ctx)
    ctx.leaves.append((path, value))
    return LEAF


def _tree_flatten(node: tp.Any, api: str) -> Flattened:
    """Tree mode: ``jax.tree`` flattening with Variables as leaves, none of them reached twice."""
    check_tree(node, api, "keystr")
    pairs, treedef = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x: isinstance(x, Variable))
    leaves = [(tuple(jax_key(e) for e in path), leaf) for path, leaf in pairs]
    templates = tuple(_template(leaf) if isinstance(leaf, Variable) else None for _, leaf in leaves)
    return Flattened(TreeDef(treedef, tuple(p for p, _ in leaves), templates), leaves)


def _template(variable: tp.Any) -> VariableTemplate:
    """What a Variable leaf is rebuilt from; a tracer of a hijax Variable (inside ``jax.jit``)
    gives the hijax class it traces and the metadata its type holds."""
    if isinstance(variable, jax.core.Tracer):
        return VariableTemplate(_hijax.class_of(variable), tuple(sorted(variable.get_metadata().items())))
    return VariableTemplate(type(variable), sorted_items(variable._var_metadata))


def flatten_node(
    node: tp.Any,
    graph: bool,
    api: str,
    ref_index: RefMap | None = None,
    visited: set[int] | None = None,
    ref_outer_index: RefMap | None = None,
) -> Flattened:
    """Flattens ``node`` by identity (``graph``, filling ``ref_index`` with object -> index)
    or as a plain JAX tree; ``api`` names the caller in tree-mode errors. The objects whose
    ids are in ``visited`` (graph mode, filled in turn) are given as references to their
    index; those in ``ref_outer_index`` have their outer index recorded."""
    if graph:
        ctx = _FlattenContext(ref_index, visited, ref_outer_index)
        root = _data_attribute(node, (), ctx)  # a scalar at the root is its one leaf
        return Flattened(root, ctx.leaves)
    return _tree_flatten(node, api)
