"""Graph nodes as pytrees: NodeStates, to_tree / from_tree, and prefix.

``to_tree`` replaces every graph node inside a pytree by a :class:`NodeStates`
(GraphDef as static data, States as children), sharing one index map across the
nodes so that references shared between them survive; ``from_tree`` undoes it.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax

from .filterlib import to_predicate
from .graphlib import GraphDef, PathParts, RefMap, jax_key
from .graphlib._split_merge import flatten_for, split_state, unflatten_leaves
from .graphlib._unflatten import collect_leaves
from .pytreelib import Pytree
from .variablelib import Variable

__all__ = ["NodeStates", "from_tree", "prefix", "to_tree"]


@dataclasses.dataclass(frozen=True)
class NodeStates:
    """A graph node as a pytree: its GraphDef (static) and its States (children)."""

    _graphdef: GraphDef[tp.Any] | None
    states: tuple[tp.Any, ...]
    metadata: tp.Any

    @property
    def graphdef(self) -> GraphDef[tp.Any]:
        if self._graphdef is None:
            raise ValueError("No graphdef available")
        return self._graphdef

    @property
    def state(self) -> tp.Any:
        if len(self.states) != 1:
            raise ValueError(f"Expected exactly one state, got {len(self.states)}")
        return self.states[0]

    def replace(self, **changes: tp.Any) -> NodeStates:
        """A copy with some fields replaced."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_split(cls, graphdef: GraphDef[tp.Any] | None, state: tp.Any, /, *states: tp.Any, metadata: tp.Any = None) -> NodeStates:
        return cls(graphdef, (state, *states), metadata)

    @classmethod
    def from_states(cls, state: tp.Any, *states: tp.Any) -> NodeStates:
        return cls(None, (state, *states), None)

    @classmethod
    def from_prefixes(cls, prefixes: tp.Iterable[tp.Any], /, *, metadata: tp.Any = None) -> NodeStates:
        return cls(None, tuple(prefixes), metadata)


jax.tree_util.register_pytree_with_keys(
    NodeStates,
    lambda n: ([(jax.tree_util.GetAttrKey("states"), n.states)], (n._graphdef, n.metadata)),
    lambda aux, children: NodeStates(aux[0], children[0], aux[1]),
    lambda n: ([n.states], (n._graphdef, n.metadata)),
)


def to_tree(
    tree: tp.Any,
    /,
    *,
    prefix: tp.Any = None,
    split_fn: tp.Any = None,
    map_non_graph_nodes: bool = False,
    ctxtag: tp.Hashable | None = None,
    check_aliasing: bool = True,
) -> tp.Any:
    """``tree`` with each graph node and Variable replaced by a :class:`NodeStates`; one
    reached before (in another node, or as one) is a reference to it, without state."""
    ref_index = RefMap()
    visited: set[int] = set()

    def convert(node: tp.Any) -> tp.Any:
        if not _is_node(node):
            return node
        graphdef, flat = flatten_for(node, True, "to_tree", ref_index, visited=visited)
        return NodeStates.from_split(graphdef, split_state(flat))

    return jax.tree.map(convert, tree, is_leaf=_is_node)


def _is_node(x: tp.Any) -> bool:
    """What :func:`to_tree` turns into a NodeStates: a graph node or a Variable."""
    return isinstance(x, (Pytree, Variable))


def from_tree(tree: tp.Any, /, *, prefix: tp.Any = None, merge_fn: tp.Any = None, is_node_leaf: tp.Any = None,
              is_leaf: tp.Any = None, map_non_graph_nodes: bool = False, is_inner: bool | None = None,
              ctxtag: tp.Hashable | None = None) -> tp.Any:
    """The inverse of :func:`to_tree`: rebuilds the graph nodes from their NodeStates."""
    index_ref: dict[int, tp.Any] = {}

    def convert(x: tp.Any) -> tp.Any:
        if not isinstance(x, NodeStates):
            return x
        return unflatten_leaves(x.graphdef, collect_leaves(x.states), index_ref, False)

    return jax.tree.map(convert, tree, is_leaf=lambda x: isinstance(x, NodeStates))


def prefix(node: tp.Any, filter_map: tp.Any, /, *, graph: bool | None = None) -> tp.Any:
    """``node`` with each Variable / array leaf replaced by ``filter_map(path, leaf)`` (or the
    value of the first filter of a ``{filter: value}`` mapping that matches it)."""
    if isinstance(filter_map, tp.Mapping):
        pairs = [(to_predicate(f), v) for f, v in filter_map.items()]

        def compute(path: PathParts, leaf: tp.Any) -> tp.Any:
            for predicate, value in pairs:
                if predicate(path, leaf):
                    return value
            raise ValueError(f"No filter in the prefix mapping matches the leaf at path {path}: {leaf!r}")
    else:
        compute = filter_map

    # Graph mode and tree mode give the same shape: ``node`` with each Variable (or
    # array) replaced by its prefix, which is what the transforms' axis arguments mirror.
    return jax.tree_util.tree_map_with_path(
        lambda p, leaf: compute(tuple(jax_key(e) for e in p), leaf), node, is_leaf=lambda x: isinstance(x, Variable)
    )
