"""Operations on a graph's state: read it, write it, copy it, pop it, map it."""

from __future__ import annotations

import copy
import functools
import typing as tp
import warnings
from collections.abc import MutableSequence

import jax

from .. import _structure, pytreelib, reprlib
from ..pytreelib import Pytree
from ..statelib import State, from_flat_state, split_flat
from ..variablelib import Variable
from ._mode import resolve_mode
from ._nodes import PathParts, child, children_of, is_container, is_node
from ._split_merge import (
    GraphDef,
    GraphState,
    collect_leaves,
    flatten_for,
    split,
    unflatten_leaves,
)

A = tp.TypeVar("A")


PureState = State


def _group(states: list[State], filters: tp.Sequence[tp.Any]) -> tp.Any:
    return states[0] if len(filters) <= 1 else tuple(states)


def state(node: tp.Any, *filters: tp.Any, graph: bool | None = None) -> tp.Any:
    """The State of ``node``'s Variables (and arrays); one State per filter when filters are given."""
    _, flat = flatten_for(node, graph, "split")  # flax's tree-mode errors name split here
    if not filters:
        return from_flat_state(flat)
    groups = split_flat(flat, filters, exhaustive=False)
    return _group([from_flat_state(g) for g in groups], filters)


variables = state


def graphdef(node: tp.Any, /, *, graph: bool | None = None) -> GraphDef[tp.Any]:
    """The GraphDef of ``node``."""
    return flatten_for(node, graph, "split")[0]  # flax's tree-mode errors name split here


def update(node: tp.Any, state: tp.Any, /, *states: tp.Any) -> None:
    """Writes the leaves of ``state`` (and ``states``) into ``node`` in place: into its
    Variables (a Ref they hold is written into), its bare Refs, and its mutable containers.
    A Variable given as ``node`` takes the one non-empty state."""
    if isinstance(node, Variable):
        _update_variable(node, _only_non_empty(state, states) if states else state)
        return
    if not is_node(node):
        raise RuntimeError(f"Unsupported type: {type(node)}, update takes a graph node, a container or a Variable")
    for path, leaf in collect_leaves((state, *states)):
        _set_at_path(node, path, leaf)


def _only_non_empty(state: tp.Any, states: tuple[tp.Any, ...]) -> tp.Any:
    """The one state of several that is not an empty mapping (ValueError unless exactly one)."""
    given = (state, *states)
    non_empty = [s for s in given if not isinstance(s, tp.Mapping) or s]
    if len(non_empty) != 1:
        raise ValueError(f"Expected exactly one non-empty state, got: {given!r}")
    return non_empty[0]


def _update_variable(variable: Variable[tp.Any], value: tp.Any) -> None:
    """``variable`` takes ``value``: a Variable's value and metadata, an array (written into
    the Ref it holds, if it holds one); an empty State leaves it as it is."""
    if isinstance(value, Variable):
        variable.update_from_state(value)
    elif isinstance(value, tp.Mapping) and not value:
        return
    elif reprlib.is_ref(variable.get_raw_value()) and (reprlib.is_array(value) or reprlib.is_ref(value)):
        variable.get_raw_value()[...] = value[...]
    else:
        variable.set_raw_value(value)


def _is_state_leaf(x: tp.Any) -> bool:
    """Whether ``x`` is a leaf of a State: a Variable, an array or a Ref."""
    return isinstance(x, Variable) or reprlib.is_array(x)


_MISSING = object()


def _set_at_path(node: tp.Any, path: PathParts, leaf: tp.Any) -> None:
    parent = node
    for i, key in enumerate(path[:-1]):
        try:
            parent = child(parent, key)
        except (KeyError, IndexError, TypeError) as e:
            raise ValueError(
                f"Cannot update {type(node).__name__}: {type(parent).__name__} at path {path[:i]} has no "
                f"attribute {key!r} (on the way to {path})."
            ) from e
    key = path[-1]
    try:
        current = child(parent, key)
    except (KeyError, IndexError, TypeError):
        current = _MISSING
    if isinstance(current, Variable):
        _update_variable(current, leaf)
    elif reprlib.is_ref(current):
        current[...] = leaf
    elif current is not _MISSING and current is not None and is_node(current) and _is_state_leaf(leaf):
        raise ValueError(f"Expected a subgraph for {key!r}, but got: {leaf!r}")
    elif isinstance(parent, Pytree) and isinstance(parent, MutableSequence) and not isinstance(key, int):
        raise KeyError(f"Invalid key: {key}")  # an nnx.List is keyed by the index of its items
    elif isinstance(parent, Pytree) and isinstance(parent, MutableSequence) and key == len(parent):
        parent.append(leaf)  # an nnx.List grows by the item one past its end
    elif isinstance(parent, Pytree):
        parent._setattr(key, leaf)
    elif isinstance(parent, (list, dict)):
        parent[key] = leaf  # type: ignore[index]
    else:
        raise ValueError(
            f"Cannot set key {key!r} at path {path} of {type(node).__name__}: "
            f"its parent, of type {type(parent).__name__}, is immutable."
        )


def clone(node: A, variables: bool = True, *, arrays: bool = False, graph: bool | None = None) -> A:
    """A copy of ``node`` with new Variables (and new arrays if ``arrays``), same structure."""
    if arrays and not variables:
        raise ValueError("If arrays is True, variables should be also True")
    gdef, flat = flatten_for(node, graph, "clone")
    leaves = []
    for path, leaf in flat:
        if isinstance(leaf, Variable) and variables:
            leaf = leaf.copy()  # keeps the Variable's type, metadata and hooks
            if arrays:
                leaf.set_raw_value(_copy_arrays(leaf.get_raw_value()))
        elif arrays:
            leaf = _copy_arrays(leaf)
        leaves.append((path, leaf))
    return unflatten_leaves(gdef, leaves, None, False)


def deep_copy(node: A) -> A:
    """``copy.deepcopy`` of a Pytree, as flax's: a copy of its graph (in graph mode whatever the
    global mode, so what it shares stays shared) with deep copies of its static values and,
    for each Variable, a new one of its type holding deep copies of its value and metadata (a
    ref Variable a Ref of its own)."""
    gdef, flat = flatten_for(node, True, "deepcopy")
    return unflatten_leaves(copy.deepcopy(gdef), [(path, _deep_copied(leaf)) for path, leaf in flat], None, False)


def _deep_copied(leaf: tp.Any) -> tp.Any:
    if not isinstance(leaf, Variable):
        return copy.deepcopy(leaf)
    raw = leaf.get_raw_value()
    return leaf.copy(copy.deepcopy(raw[...] if reprlib.is_ref(raw) else raw), **copy.deepcopy(leaf.get_metadata()))


pytreelib.set_deep_copy(deep_copy)


def _copy_arrays(tree: tp.Any) -> tp.Any:
    """``tree`` with each array replaced by a copy (other leaves kept)."""
    return jax.tree.map(lambda x: x.copy() if hasattr(x, "copy") and reprlib.is_array(x) else x, tree)


def pop(node: tp.Any, *filters: tp.Any) -> tp.Any:
    """Removes the Variables matching ``filters`` from ``node`` and returns them as States."""
    if not filters:
        raise ValueError("Expected at least one filter")
    if not is_node(node):
        raise RuntimeError(f"Unsupported type: {type(node)}, pop takes a graph node or a container")
    _, flat = flatten_for(node, True, "pop")
    groups = split_flat(flat, filters, exhaustive=False)
    for group in groups:
        for path, _ in group:
            parent = node
            for key in path[:-1]:
                parent = child(parent, key)
            if isinstance(parent, Pytree):
                delattr(parent, str(path[-1]))  # an nnx.List's items are not attributes: AttributeError
            elif isinstance(parent, (dict, State)):
                del parent[path[-1]]
            else:  # a tuple, a list or another pytree has no key to pop
                raise ValueError(f"Cannot pop key {path[-1]!r} from node of type {type(parent).__name__}")
    return _group([from_flat_state(g) for g in groups], filters)


def map(
    f: tp.Callable[[PathParts, tp.Any], tp.Any],
    node: A,
    /,
    *,
    graph: bool | None = None,
    recreate_variables: bool = True,
) -> A:
    """A copy of ``node`` whose state leaves are ``f(path, leaf)``; a plain value ``f``
    gives for a Variable is wrapped back in one only if ``recreate_variables`` (graph mode)."""
    gdef, flat = flatten_for(node, graph, "map")
    return unflatten_leaves(gdef, [(p, f(p, v)) for p, v in flat], None, False, recreate_variables)


def unpack(node: A, *filters: tp.Any, graph: bool | None = None) -> tp.Any:
    """``split`` returning one :class:`GraphState` (state + graphdef) per filter, ready for ``merge``."""
    gdef, *states = split(node, *(filters or (...,)), graph=graph)
    graph_states = tuple(GraphState(gdef, s) for s in states)
    return graph_states[0] if len(graph_states) == 1 else graph_states


def as_pure(tree: A) -> A:
    """``tree`` with every Variable replaced by its plain value, and every bare Ref by its array."""
    return jax.tree.map(_pure_leaf, tree, is_leaf=lambda x: isinstance(x, Variable))


def _pure_leaf(x: tp.Any) -> tp.Any:
    if isinstance(x, Variable):
        return x.get_value()
    return x[...] if reprlib.is_ref(x) else x


def pure(tree: A) -> A:
    """Deprecated spelling of :func:`as_pure`."""
    warnings.warn("This function is deprecated. Use as_pure instead.", DeprecationWarning, stacklevel=2)
    return as_pure(tree)


def cached_partial(
    f: tp.Callable[..., tp.Any], *cached_args: tp.Any, graph: bool | None = None, graph_updates: bool | None = None
) -> tp.Callable[..., tp.Any]:
    """``f`` with ``cached_args`` bound first, as clones that share their Variables (so ``f``'s
    updates reach the originals' Variables); a call that changes a clone's graph structure
    raises. Graph mode with graph updates only."""
    if not resolve_mode(graph, graph_updates).graph_updates:  # false outside graph mode
        raise ValueError("cached_partial is a graph-mode-only API and requires graph_updates=True.")
    clones = tuple(clone(arg, variables=False, graph=True) for arg in cached_args)
    structures = [_bound_structure(c) for c in clones]
    # While no watched Pytree changes, a call cannot have changed the clones' structure.
    watched = all(_watch_pytrees(c) for c in clones)
    checked_at = _structure.epoch

    @functools.wraps(f)
    def call(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        nonlocal checked_at
        out = f(*clones, *args, **kwargs)
        if watched and checked_at == _structure.epoch:
            return out
        for node, expected in zip(clones, structures):
            found = _bound_structure(node)
            if found != expected:
                raise ValueError(
                    "The graph structure of a node added to cached_partial was mutated inside the "
                    f"transformation, this is not allowed.\nNode: {node}\nOutput graphdef: "
                    f"{found.graphdef}\nExpected graphdef: {expected.graphdef}"
                )
        checked_at = _structure.epoch
        return out

    return call


def _watch_pytrees(node: tp.Any) -> bool:
    """Watches every Pytree reachable from ``node``; whether every container on the way is
    a tuple (a list, a dict or another pytree can change without the epoch changing)."""
    stack, seen = [node], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Pytree):
            _structure.watch(x)
        elif is_container(x) and type(x) is not tuple:
            return False
        stack.extend(value for _, value in children_of(x))
    return True


class _BoundStructure(tp.NamedTuple):
    """What a call must leave unchanged in a node bound by :func:`cached_partial`: its
    GraphDef and which Variables it holds (one replaced by another of its type keeps
    the GraphDef)."""

    graphdef: GraphDef[tp.Any]
    variable_ids: tuple[int | None, ...]


def _bound_structure(node: tp.Any) -> _BoundStructure:
    gdef, flat = flatten_for(node, True, "cached_partial")
    return _BoundStructure(gdef, tuple(id(leaf) if isinstance(leaf, Variable) else None for _, leaf in flat))
