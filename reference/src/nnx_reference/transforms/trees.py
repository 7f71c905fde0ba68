"""Pytree pieces the transforms share: prefixes, static metadata, partitions."""

from __future__ import annotations

import typing as tp

import jax

from .. import graphlib, variablelib
from ..graphlib import resolve_mode  # noqa: F401 (the transforms call it as trees.resolve_mode)


class Missing:
    """Sentinel for an omitted positional function argument (decorator form)."""


MISSING = Missing()


def decorator_or_call(f: tp.Any, make: tp.Callable[[tp.Callable], tp.Any]) -> tp.Any:
    """Support both ``@t`` / ``t(f, ...)`` and ``@t(...)`` forms."""
    if isinstance(f, Missing):
        return make
    return make(f)


def is_variable(x: tp.Any) -> bool:
    return isinstance(x, variablelib.Variable)


def is_object(x: tp.Any) -> bool:
    """A graph object a transform must lift: a graph node or a Variable."""
    return isinstance(x, variablelib.Variable) or graphlib.is_graph_node(x)


def is_node_leaf(x: tp.Any) -> bool:
    """Stop flattening at graph nodes whose children are not plain containers."""
    return is_object(x) and not isinstance(x, (list, tuple, dict))


class Static:
    """A pytree with no leaves that carries a hashable value as metadata."""

    __slots__ = ("value",)

    def __init__(self, value: tp.Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Static) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


jax.tree_util.register_pytree_node(Static, lambda s: ((), s.value), lambda v, _: Static(v))


def broadcast_prefix(prefix: tp.Any, tree: tp.Any, is_leaf: tp.Callable[[tp.Any], bool]) -> list:
    """One prefix entry per leaf of ``tree`` (leaves as ``is_leaf`` stops them).

    ``prefix`` is a JAX tree prefix of ``tree``: any pytree (tuples, dicts,
    Module-shaped prefixes from ``nnx.prefix``) whose leaves (ints, None,
    StateAxes, Carry, shardings) apply to whole subtrees.
    """
    out: list = []

    def spread(p: tp.Any, sub: tp.Any) -> None:
        out.extend([p] * len(jax.tree_util.tree_leaves(sub, is_leaf=is_leaf)))

    jax.tree_util.tree_map(spread, prefix, tree, is_leaf=lambda x: x is None)
    return out


def partition(pure: tp.Any, prefix: tp.Any, select: tp.Callable[[tp.Any], bool]) -> tuple:
    """Split pure inputs ``(leaves, states)`` into (selected, rest), with ``None`` holes."""
    leaves, states = pure
    leaf_prefix, group_prefix = prefix
    chosen = (
        [v if select(p) else None for v, p in zip(leaves, leaf_prefix)],
        [v if select(p) else None for v, p in zip(states, group_prefix)],
    )
    rest = (
        [None if select(p) else v for v, p in zip(leaves, leaf_prefix)],
        [None if select(p) else v for v, p in zip(states, group_prefix)],
    )
    return chosen, rest


def join(chosen: tp.Any, rest: tp.Any) -> tp.Any:
    """Inverse of ``partition``."""
    if chosen is None:
        return rest
    return (
        [a if a is not None else b for a, b in zip(chosen[0], rest[0])],
        [a if a is not None else b for a, b in zip(chosen[1], rest[1])],
    )


class NodeStates:
    """A graph object inside a pure output tree: its State groups, in prefix order."""

    __slots__ = ("states",)

    def __init__(self, states: tuple):
        self.states = tuple(states)

    def __repr__(self) -> str:
        return f"NodeStates({self.states!r})"


jax.tree_util.register_pytree_node(
    NodeStates, lambda n: (n.states, None), lambda _, states: NodeStates(states)
)


Expand = tp.Callable[[tp.Any, tp.Any], list]


def whole(prefix: tp.Any, obj: tp.Any = None) -> list:
    """The default expansion: the whole object takes the prefix entry."""
    return [(..., prefix)]


def out_prefix_for_jax(prefix: tp.Any, expand: Expand = whole) -> tp.Any:
    """The user's output prefix as JAX sees it: multi-group entries become NodeStates."""

    def convert(p: tp.Any) -> tp.Any:
        groups = expand(p, None)
        if len(groups) == 1 and groups[0][0] is ...:
            return p
        return NodeStates(tuple(value for _, value in groups))

    return jax.tree_util.tree_map(convert, prefix, is_leaf=lambda x: type(x) not in (list, tuple, dict))
