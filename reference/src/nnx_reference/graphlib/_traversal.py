"""Walking a graph: its nodes and leaves, children, duplicates; rebuilding it node by node."""

from __future__ import annotations

import typing as tp
import warnings

import jax

from .. import _hijax
from .._tracing import current_trace_state
from .._variable_metadata import as_ref, wants_ref
from ..filterlib import to_predicate
from ..pytreelib import NODES, TRACE_STATE, HashableMapping, Pytree, PytreeState
from ..statelib import State
from ..variablelib import Variable
from ._mode import resolve_graph
from ._nodes import (
    Key,
    PathParts,
    children_of,
    is_container,
    is_node,
    jax_key,
    one_level,
    pytree_children,
)
from ._state_ops import map
from ._tree_check import check_tree

A = tp.TypeVar("A")


def iter_graph(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    """Every node and leaf reachable from ``node`` (each once), children before parents."""
    if resolve_graph(graph):
        yield from _iter_graph(node, (), set())
    else:
        check_tree(node, "iter_graph", "slashes")
        yield from _iter_tree(node, ())


def _iter_items(node: tp.Any) -> list[tuple[Key, tp.Any, bool]]:
    """``(key, value, walk_into)``: a Pytree's internals (not walked) and attributes, static
    ones too, or a container's children."""
    if isinstance(node, Pytree):
        internals = [(NODES, HashableMapping(node._pytree__nodes), False), ("_pytree__state", PytreeState(), False)]
        attributes = [(key, value, True) for key, value, _ in pytree_children(node)]
        return sorted([*internals, *attributes], key=lambda item: (isinstance(item[0], str), item[0]))
    if _is_pytree_node(node):
        return [(k, v, True) for k, v in one_level(node).children]
    return []


def _is_pytree_node(x: tp.Any) -> bool:
    """A value graph mode walks through and visits once, as a graph node: a container (static
    ones too) or None, JAX's empty pytree."""
    return x is None or is_container(x)


def _iter_graph(node: tp.Any, path: PathParts, seen: set[int]) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    if isinstance(node, (Pytree, Variable)) or _is_pytree_node(node):
        if id(node) in seen:
            return
        seen.add(id(node))
    for key, child, walk in _iter_items(node):
        if walk:
            yield from _iter_graph(child, (*path, key), seen)
        else:
            yield (*path, key), child
    yield path, node


def _iter_tree(node: tp.Any, path: PathParts) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    """Tree mode: what ``jax.tree`` flattens, a Pytree's internal state and data attributes
    (not its static ones)."""
    children = children_of(node)
    if isinstance(node, Pytree):
        children = sorted(
            [("_pytree__state", PytreeState()), *children], key=lambda item: (isinstance(item[0], str), item[0])
        )
    for key, child in children:
        yield from _iter_tree(child, (*path, key))
    yield path, node


def iter_children(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[Key, tp.Any]]:
    """The immediate children of ``node`` that are graph nodes (Pytrees) or Variables, as ``(key, child)``."""
    if not is_node(node):  # a Variable, an array: no children to give, a ValueError as flax's
        if resolve_graph(graph):
            raise ValueError(
                f"Expected a graph node, got {type(node).__name__}. If this is a regular pytree, use graph=False."
            )
        raise ValueError(f"Expected a pytree node, got {type(node).__name__}. If this is a graph node, use graph=True.")
    for key, child in children_of(node):
        if isinstance(child, (Pytree, Variable)):
            yield key, child


def iter_module_children(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[Key, tp.Any]]:
    """The immediate children of ``node`` that are graph nodes (Modules and other Pytrees), as
    ``(key, child)``: :func:`iter_children` without the Variables."""
    return ((k, c) for k, c in iter_children(node, graph=graph) if isinstance(c, Pytree))


def recursive_map(f: tp.Callable[[PathParts, tp.Any], tp.Any], node: tp.Any, /, *, graph: bool | None = None) -> tp.Any:
    """Rebuilds ``node`` bottom-up, replacing every node and leaf ``x`` at ``path`` by ``f(path, x)``.
    In graph mode a node met again is its first result, a node met inside itself (a cycle) is a
    ValueError, and so is a new child for a container that cannot take one (a tuple); a new
    Variable for one a Pytree holds is taken into that Variable, as flax's."""
    return rebuild(f, node, graph=graph, strict=True)


def rebuild(
    f: tp.Callable[[PathParts, tp.Any], tp.Any], node: tp.Any, /, *, graph: bool | None = None, strict: bool = False
) -> tp.Any:
    """:func:`recursive_map`'s walk; without ``strict`` (the Rngs helpers' walk, which swaps
    streams wherever they are) a node met inside itself is its copy in progress, a tuple is
    rebuilt with its new children, and a new Variable simply takes its place."""
    cache: dict[int, tp.Any] = {}
    in_progress: set[int] = set()
    use_graph = resolve_graph(graph)
    checks = use_graph and strict
    if not use_graph:
        check_tree(node, "recursive_map", "slashes")

    def visit(x: tp.Any, path: PathParts) -> tp.Any:
        if use_graph and isinstance(x, (Pytree, Variable)) and id(x) in cache:
            return cache[id(x)]
        if checks and id(x) in in_progress:
            where = "/".join(str(part) for part in path)  # this module's map is nnx.map
            raise ValueError(
                f"Found cycle in the graph at path '{where}'. Node of type {type(x)} "
                "has already been visited but has not been returned yet."
            )
        if isinstance(x, Pytree):
            new = object.__new__(type(x))
            if use_graph and not strict:
                cache[id(x)] = new
            in_progress.add(id(x))
            object.__setattr__(new, NODES, dict(x._pytree__nodes))
            object.__setattr__(new, TRACE_STATE, current_trace_state())
            for key, value, data in pytree_children(x):
                if data:
                    mapped = visit(value, (*path, key))
                    new.__dict__[key] = _into_variable(value, mapped) if checks else mapped
                else:
                    new.__dict__[key] = f((*path, key), value) if use_graph else value
            in_progress.discard(id(x))
        elif is_container(x):
            children, treedef = one_level(x)
            new_children = [visit(c, (*path, k)) for k, c in children]
            if checks and not isinstance(x, _MUTABLE_CONTAINERS):
                _check_unchanged(x, children, new_children)
            new = jax.tree_util.tree_unflatten(treedef, new_children)
        else:
            new = x
        result = f(path, new)
        if use_graph and isinstance(x, (Pytree, Variable)):
            cache[id(x)] = result
        return result

    return visit(node, ())


def _into_variable(old: tp.Any, new: tp.Any) -> tp.Any:
    """What a Pytree keeps of ``f``'s new value for its attribute: a new Variable for one it
    holds is taken into that Variable (shared with the input), as flax's graph nodes do."""
    if isinstance(old, Variable) and isinstance(new, Variable) and new is not old:
        old.update_from_state(new)
        return old
    return new


_MUTABLE_CONTAINERS = (list, dict, State)
"""The containers flax's graph-mode recursive_map can put a new child into."""


def _check_unchanged(container: tp.Any, children: list[tuple[Key, tp.Any]], new_children: list[tp.Any]) -> None:
    """ValueError naming the first child of an immutable container that ``f`` replaced."""
    for (key, old), new in zip(children, new_children):
        if new is not old:
            raise ValueError(
                f"Cannot update key '{key}' for node of type '{type(container)}' because the node does not "
                "support mutation."
            )


def find_duplicates(node: tp.Any, /, *, only: tp.Any = ...) -> list[list[PathParts]]:
    """Groups of paths that reach the same Pytree or Variable: a node is entered at its
    first path, and each later path that reaches it is listed if it matches ``only``."""
    predicate = to_predicate(only)
    paths: dict[int, list[PathParts]] = {}

    def visit(x: tp.Any, path: PathParts) -> None:
        if isinstance(x, (Pytree, Variable)):
            if id(x) in paths:
                if predicate(path, x):
                    paths[id(x)].append(path)
                return
            paths[id(x)] = [path]
        for key, child in children_of(x):
            visit(child, (*path, key))

    visit(node, ())
    return [p for p in paths.values() if len(p) > 1]


def set_metadata(node: tp.Any, /, *, only: tp.Any = Variable, **metadata: tp.Any) -> None:
    """Sets ``metadata`` on every Variable of ``node`` that matches ``only``."""
    predicate = to_predicate(only)
    for path, x in iter_graph(node):
        if isinstance(x, Variable) and predicate(path, x):
            x.set_metadata(**metadata)


def with_vars(
    node: A,
    /,
    *,
    hijax: bool | None = None,
    ref: bool | None = None,
    mutable: bool | None = None,
    only: tp.Any = ...,
    allow_duplicates: bool = False,
) -> A:
    """``node`` with each Variable (matching ``only``) that differs from the given hijax / ref /
    mutable settings replaced by a copy that has them; the others are kept as they are. A
    Variable to replace that is shared needs ``allow_duplicates`` (its copy is then shared)."""
    predicate = to_predicate(only)
    updates = {k: v for k, v in (("hijax", hijax), ("ref", ref), ("mutable", mutable)) if v is not None}

    def replaced(path: PathParts, x: tp.Any) -> bool:
        return (
            isinstance(x, Variable)
            and predicate(path, x)
            and any(x.get_metadata().get(k, _SETTING_DEFAULTS.get(k)) != v for k, v in updates.items())
        )

    def convert(path: PathParts, x: tp.Any) -> tp.Any:
        if not replaced(path, x):
            return x
        metadata = {**x.get_metadata(), **updates}
        if not _changes_mode(x, hijax, ref):
            metadata = _with_mutability(metadata)
        value = x.get_value()
        cls = _hijax.class_of(x)  # a tracer of a hijax Variable (inside jax.jit) converts as the Variable
        return cls._new(as_ref(value) if wants_ref(metadata) else value, metadata)

    if resolve_graph(None) and (isinstance(node, Pytree) or is_container(node)):
        duplicates = [] if allow_duplicates else find_duplicates(node, only=replaced)
        if duplicates:
            raise ValueError(
                f"Found duplicate Variables at paths {duplicates}; pass allow_duplicates=True to allow them."
            )
        return map(convert, node)
    check_tree(node, "split", "keystr")  # refuses a Variable held twice, naming split as flax's tree mode does
    return jax.tree_util.tree_map_with_path(  # type: ignore[no-any-return]
        lambda p, x: convert(tuple(jax_key(e) for e in p), x), node, is_leaf=lambda x: isinstance(x, Variable)
    )


_SETTING_DEFAULTS = {"mutable": True}
"""What a Variable without ``mutable`` metadata counts as (``hijax`` and ``ref`` it always has)."""


def vars_as(
    node: A,
    /,
    *,
    hijax: bool | None = None,
    ref: bool | None = None,
    mutable: bool | None = None,
    only: tp.Any = ...,
    allow_duplicates: bool = False,
) -> A:
    """Deprecated name of :func:`with_vars` (warns)."""
    warnings.warn("This function is deprecated. Use with_vars instead.", DeprecationWarning, stacklevel=2)
    return with_vars(node, hijax=hijax, ref=ref, mutable=mutable, only=only, allow_duplicates=allow_duplicates)


def _changes_mode(variable: Variable, hijax: bool | None, ref: bool | None) -> bool:
    """Whether the conversion asks another ``hijax`` or ``ref`` than the Variable has: flax
    then gives the new Variable ``mutable`` as asked, keeping its Ref."""
    return (hijax is not None and hijax != variable.hijax) or (ref is not None and ref != variable.ref)


def _with_mutability(metadata: dict[str, tp.Any]) -> dict[str, tp.Any]:
    """Applies a ``mutable`` request to a Variable whose mode stays, as the hijax guide shows:
    an immutable Variable drops its Ref and remembers it (``had_ref``); a mutable one gets it
    back, and ``mutable=True`` is the default, so it is not kept."""
    if metadata.get("mutable") is False and metadata.get("ref"):
        metadata.update(ref=False, had_ref=True)
    elif metadata.get("mutable") is True:
        del metadata["mutable"]
        if metadata.pop("had_ref", False):
            metadata["ref"] = True
    return metadata
