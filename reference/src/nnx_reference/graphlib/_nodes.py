"""What the graph walks: graph nodes, containers, and their children by key."""

from __future__ import annotations

import typing as tp

import jax
import numpy as np

from .. import reprlib
from ..pytreelib import Pytree, attribute_layout
from ..variablelib import Variable

Key = tp.Hashable
PathParts = tuple[Key, ...]


def is_graph_node(x: tp.Any) -> bool:
    """Whether graph mode gives ``x`` an identity: a Pytree (Object, Module), a Variable
    or an array Ref, in either mode (flax's answer; the walk itself tests for Pytrees)."""
    return isinstance(x, (Pytree, Variable)) or reprlib.is_ref(x)


def is_node(x: tp.Any) -> bool:
    """Whether ``x`` is a Pytree or a JAX pytree node other than a Variable: its structure
    is not a lone leaf, so ``None`` and a childless registered type are nodes (flax's answer;
    the walk itself goes through Pytrees and :func:`is_container` values)."""
    if isinstance(x, Pytree):
        return True
    if isinstance(x, Variable) or reprlib.is_ref(x):
        return False
    structure = jax.tree_util.tree_structure(x, is_leaf=lambda y: y is not x)
    return not (structure.num_nodes == 1 and structure.num_leaves == 1)


_ATOMS = (type(None), bool, int, float, complex, str, bytes, type, Variable, Pytree, jax.Array, np.ndarray, np.dtype)


def is_container(x: tp.Any) -> bool:
    """Whether the graph walks through ``x`` as a container: a list, tuple, dict or other
    JAX pytree node that is neither a graph node nor a Variable."""
    if isinstance(x, _ATOMS):  # a callable pytree (jax.tree_util.Partial) is walked through, as in flax
        return False
    if isinstance(x, (list, tuple, dict)):
        return True
    return not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(x, is_leaf=lambda y: y is not x))


def jax_key(entry: tp.Any) -> Key:
    """The NNX path element for one JAX key-path entry."""
    for attr in ("name", "key", "idx"):
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return entry


class Level(tp.NamedTuple):
    """A container taken apart one level deep."""

    children: list[tuple[Key, tp.Any]]  # (key, child)
    treedef: jax.tree_util.PyTreeDef  # rebuilds the container from its children


def one_level(x: tp.Any) -> Level:
    """The children of a container (not their children), and how to rebuild it."""
    pairs, treedef = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    return Level([(jax_key(path[0]), child) for path, child in pairs], treedef)


def pytree_children(node: Pytree) -> list[tuple[Key, tp.Any, bool]]:
    """``(key, value, is_data)`` of a Pytree's attributes, sorted by key."""
    values = node.__dict__
    return [(key, values[key], data) for key, data in attribute_layout(node).keys]


def child(node: tp.Any, key: Key) -> tp.Any:
    """The child of a graph node or container at ``key`` (raises KeyError, IndexError or TypeError)."""
    if isinstance(node, Pytree):
        return node.__dict__[key]
    if isinstance(node, (list, tuple)) and isinstance(key, int):
        return node[key]
    if isinstance(node, tp.Mapping):
        return node[key]
    return dict(one_level(node).children)[key]


def children_of(node: tp.Any) -> list[tuple[Key, tp.Any]]:
    """``(key, child)`` of a graph node's data attributes or a container's children; none for a leaf."""
    if isinstance(node, Pytree):
        return [(k, v) for k, v, data in pytree_children(node) if data]
    if is_container(node):
        return one_level(node).children
    return []
