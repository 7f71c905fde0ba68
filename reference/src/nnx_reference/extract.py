"""Graph nodes as pytrees: NodeStates, to_tree / from_tree, and prefix.

``to_tree`` replaces every graph node inside a pytree by what its ``split_fn`` makes
of it (by default a :class:`NodeStates`: GraphDef as static data, States as children),
all split in one :class:`SplitContext`, whose shared index keeps the references shared
between them; ``from_tree`` undoes it in one :class:`MergeContext`.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax

from .filterlib import to_predicate
from .graphlib import GraphDef, MergeContext, PathParts, SplitContext, jax_key, merge_context, split_context
from .pytreelib import Pytree
from .transforms._checks import check_consistent_aliasing, reached
from .transforms._trees import Missing, broadcast_prefix
from .variablelib import Variable

KeyPath = tuple[tp.Any, ...]
"""A leaf's path as JAX gives it: key entries (``DictKey``, ``SequenceKey``, ...)."""

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
    def from_split(
        cls, graphdef: GraphDef[tp.Any] | None, state: tp.Any, /, *states: tp.Any, metadata: tp.Any = None
    ) -> NodeStates:
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


def default_split_fn(ctx: SplitContext, path: KeyPath, prefix: tp.Any, leaf: tp.Any) -> NodeStates:
    """What :func:`to_tree` makes of a leaf by default: its GraphDef and State."""
    return NodeStates.from_split(*ctx.split(leaf))


def is_tree_node(x: tp.Any) -> bool:
    """Whether ``x`` is a :class:`NodeStates` (what :func:`from_tree` merges by default)."""
    return isinstance(x, NodeStates)


def merge_tree_node(ctx: MergeContext, path: KeyPath, prefix: tp.Any, leaf: tp.Any) -> tp.Any:
    """What :func:`from_tree` makes of a leaf by default: the node of a NodeStates."""
    if not isinstance(leaf, NodeStates):
        raise ValueError(f"Expected TreeNode, got {type(leaf)} at path {path}")
    return ctx.merge(leaf.graphdef, *leaf.states)


def to_tree(
    tree: tp.Any,
    /,
    *,
    prefix: tp.Any = Missing,
    split_fn: tp.Callable[[SplitContext, KeyPath, tp.Any, tp.Any], tp.Any] = default_split_fn,
    map_non_graph_nodes: bool = False,
    ctxtag: tp.Hashable | None = None,
    check_aliasing: bool = True,
) -> tp.Any:
    """``tree`` with each graph node and Variable (each leaf, with ``map_non_graph_nodes``)
    replaced by ``split_fn(ctx, path, prefix, leaf)``: by default a :class:`NodeStates`,
    which for a node an earlier one reached is a reference without state. ``prefix`` is a
    tree prefix of ``tree`` (``path`` is the leaf's key path, empty without a prefix); with
    ``check_aliasing`` a Variable reached under two prefixes is a ValueError."""
    entries, treedef = _with_prefixes(tree, prefix, _is_node)
    if check_aliasing and not _no_prefix(prefix):
        check_consistent_aliasing(reached(leaf, p) for _, p, leaf in entries if _is_node(leaf))
    with split_context(ctxtag) as ctx:
        leaves = [
            split_fn(ctx, path, p, leaf) if map_non_graph_nodes or _is_node(leaf) else leaf for path, p, leaf in entries
        ]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _is_node(x: tp.Any) -> bool:
    """What :func:`to_tree` turns into a NodeStates: a graph node or a Variable."""
    return isinstance(x, (Pytree, Variable))


def _no_prefix(prefix: tp.Any) -> bool:
    return prefix is Missing or prefix is None


def _with_prefixes(
    tree: tp.Any, prefix: tp.Any, is_leaf: tp.Callable[[tp.Any], bool]
) -> tuple[list[tuple[KeyPath, tp.Any, tp.Any]], jax.tree_util.PyTreeDef]:
    """``(key path, prefix entry, leaf)`` for each leaf of ``tree``; without a prefix (None
    or Missing) every leaf gets the prefix itself and an empty path."""
    pairs, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    if _no_prefix(prefix):
        return [((), prefix, leaf) for _, leaf in pairs], treedef
    prefixes = broadcast_prefix(prefix, tree, is_leaf)
    return [(path, p, leaf) for (path, leaf), p in zip(pairs, prefixes)], treedef


def from_tree(
    tree: tp.Any,
    /,
    *,
    prefix: tp.Any = Missing,
    merge_fn: tp.Callable[[MergeContext, KeyPath, tp.Any, tp.Any], tp.Any] = merge_tree_node,
    is_node_leaf: tp.Callable[[tp.Any], bool] = is_tree_node,
    is_leaf: tp.Callable[[tp.Any], bool] = is_tree_node,
    map_non_graph_nodes: bool = False,
    is_inner: bool | None = None,
    ctxtag: tp.Hashable | None = None,
) -> tp.Any:
    """The inverse of :func:`to_tree`: each leaf of ``tree`` (as ``is_leaf`` stops it) that
    ``is_node_leaf`` picks (each one, with ``map_non_graph_nodes``) replaced by
    ``merge_fn(ctx, path, prefix, leaf)``, all merged in one context (``ctxtag``, ``is_inner``)."""
    entries, treedef = _with_prefixes(tree, prefix, is_leaf)
    with merge_context(ctxtag, is_inner) as ctx:
        leaves = [
            merge_fn(ctx, path, p, leaf) if map_non_graph_nodes or is_node_leaf(leaf) else leaf
            for path, p, leaf in entries
        ]
    return jax.tree_util.tree_unflatten(treedef, leaves)


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
