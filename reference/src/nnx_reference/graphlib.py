"""Graphs of Pytrees and Variables: split into (GraphDef, State) and merged back.

Internals other modules may rely on:

* ``graph_mode()`` / ``graph_updates()``: the current defaults (set with
  :class:`set_graph_mode` / :class:`set_graph_updates`, both callable once or as
  context managers or decorators; start values from ``NNX_GRAPH_MODE`` /
  ``NNX_GRAPH_UPDATES``, default true). ``resolve_graph(graph)`` turns an optional
  ``graph=`` argument into a bool, ``resolve_mode(graph, graph_updates)`` both.
* Graph mode walks objects by identity: each Pytree and Variable gets an integer
  index in first-visit order (root = 0, attributes visited in sorted key order), a
  second visit yields a ``NodeRef`` / ``VariableRef``, so shared references and
  cycles survive ``split``/``merge``. Arrays are state leaves; other non-node
  values are static. Containers (lists, tuples, dicts, any JAX pytree) are walked
  one level at a time and rebuilt from their ``PyTreeDef``.
* Tree mode (``graph=False``) is plain ``jax.tree`` flattening with Variables as
  leaves; a Variable reached twice raises ``ValueError`` naming both paths.
* :class:`GraphDef` is immutable, hashable and compared by structure (types,
  static attribute values, metadata, indices), so it can key caches and be a
  static argument of ``jax.jit``.
* ``flatten(node, ref_index=...)`` fills ``ref_index`` (a :class:`RefMap`, object ->
  index; objects already in it keep their index); ``unflatten(graphdef, state,
  index_ref=...)`` reuses the objects already in ``index_ref`` (index -> object),
  updating them in place: this is how a graph keeps its identities across a
  transform boundary (:class:`UpdateContext` packages exactly that).
* ``merge`` reuses the Variables found in the State (``copy=True`` copies them);
  ``split``/``state`` return the graph's own Variables, not copies.
* The pytree view of graph nodes (``to_tree``, ``from_tree``, ``prefix``,
  ``NodeStates``) lives in :mod:`extract` and is re-exported here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import typing as tp

import jax
import numpy as np

from . import reprlib
from ._tracing import current_trace_state
from .pytreelib import NODES, TRACE_STATE, HashableMapping, Pytree, PytreeState, attribute_layout
from .statelib import FlatState, State, from_flat_state, iter_flat_state, split_flat
from .spmd import BoolFlag, Setting
from .variablelib import Variable, _as_ref, _wants_ref

__all__ = [
    "GraphDef",
    "MergeContext",
    "NodeStates",
    "SplitContext",
    "UpdateContext",
    "current_update_context",
    "merge_context",
    "split_context",
    "update_context",
    "GraphState",
    "PureState",
    "as_pure",
    "cached_partial",
    "call",
    "clone",
    "find_duplicates",
    "from_tree",
    "flatten",
    "graphdef",
    "iter_children",
    "iter_graph",
    "iter_module_children",
    "map",
    "merge",
    "pop",
    "prefix",
    "pure",
    "recursive_map",
    "set_graph_mode",
    "set_graph_updates",
    "set_metadata",
    "split",
    "to_tree",
    "state",
    "unflatten",
    "unpack",
    "update",
    "variables",
    "vars_as",
    "with_vars",
]

A = tp.TypeVar("A")
Key = tp.Hashable
PathParts = tuple[Key, ...]
PureState = State


class GraphState(State):
    """A State bundled with the GraphDef it belongs to (what :func:`unpack` returns)."""

    def __init__(self, mapping: tp.Any = (), /, *, _copy: bool = True, graphdef: GraphDef[tp.Any] | None = None) -> None:
        super().__init__(mapping, _copy=_copy)
        object.__setattr__(self, "_graphdef", graphdef)

    @property
    def graphdef(self) -> GraphDef[tp.Any] | None:
        return self._graphdef

    def __getitem__(self, key: Key) -> tp.Any:
        value = self._mapping[key]
        return State(value, _copy=False) if type(value) is dict else value

    def __repr__(self) -> str:
        state = reprlib.indent_tail(State.__repr__(self), "  ")
        return f"GraphState(\n  _graphdef={self._graphdef!r},\n  _state={state}\n)"


def _graph_state_flatten(gs: GraphState) -> tuple[list[tuple[tp.Any, tp.Any]], tp.Any]:
    keys = sorted(gs._mapping, key=lambda k: (isinstance(k, str), k))
    return [(jax.tree_util.DictKey(k), gs._mapping[k]) for k in keys], (tuple(keys), gs._graphdef)


jax.tree_util.register_pytree_with_keys(
    GraphState,
    _graph_state_flatten,
    lambda aux, children: GraphState(dict(zip(aux[0], children)), _copy=False, graphdef=aux[1]),
)


# ---------------------------------------------------------------- mode flags


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "true").strip().lower() not in ("0", "false", "no", "off")


class set_graph_mode(BoolFlag):  # noqa: N801 (flax's name)
    """Sets whether NNX APIs use graph mode by default (see :class:`spmd.ConfigContext`
    for the call / context-manager / decorator forms)."""

    _setting = Setting(_env_flag("NNX_GRAPH_MODE"))


class set_graph_updates(BoolFlag):  # noqa: N801 (flax's name)
    """Sets whether transforms propagate graph structure updates by default (see
    :class:`spmd.ConfigContext` for the call / context-manager / decorator forms)."""

    _setting = Setting(_env_flag("NNX_GRAPH_UPDATES"))


def graph_mode() -> bool:
    """The current default of ``graph=``."""
    return set_graph_mode._setting.value  # type: ignore[no-any-return]


def graph_updates() -> bool:
    """The current default of ``graph_updates=``."""
    return set_graph_updates._setting.value  # type: ignore[no-any-return]


def resolve_graph(graph: bool | None) -> bool:
    """``graph`` if given, else the current graph-mode default."""
    return graph_mode() if graph is None else graph


def resolve_mode(graph: bool | None, graph_updates: bool | None) -> tuple[bool, bool]:
    """The effective ``(graph, graph_updates)`` of a call, each explicit or the current
    default; ``graph_updates`` is false outside graph mode."""
    graph = resolve_graph(graph)
    if graph_updates is None:
        graph_updates = set_graph_updates._setting.value
    return graph, graph and graph_updates


# ---------------------------------------------------------------- node kinds


def is_graph_node(x: tp.Any) -> bool:
    """Whether ``x`` is a graph node with identity (a Pytree / Object / Module)."""
    return isinstance(x, Pytree)


def is_node(x: tp.Any) -> bool:
    """Whether ``x`` is a graph node or a container the graph walks through."""
    return is_graph_node(x) or _is_container(x)


_ATOMS = (type(None), bool, int, float, complex, str, bytes, type, Variable, Pytree, jax.Array, np.ndarray, np.dtype)


def _is_container(x: tp.Any) -> bool:
    if isinstance(x, _ATOMS) or callable(x) and not isinstance(x, (list, tuple, dict)):
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


def _one_level(x: tp.Any) -> tuple[list[tuple[Key, tp.Any]], tp.Any]:
    pairs, treedef = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    return [(jax_key(path[0]), child) for path, child in pairs], treedef


def _pytree_children(node: Pytree) -> list[tuple[Key, tp.Any, bool]]:
    """``(key, value, is_data)`` of a Pytree's attributes, sorted by key."""
    values = node.__dict__
    return [(key, values[key], data) for key, data in attribute_layout(node).keys]


# ---------------------------------------------------------------- GraphDef


class _Static:
    """A static value inside a GraphDef, hashed/compared robustly."""

    __slots__ = ("value",)

    def __init__(self, value: tp.Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            return hash((type(self.value).__name__, repr(self.value)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return False
        if self.value is other.value:
            return True
        try:
            return type(self.value) is type(other.value) and bool(self.value == other.value)
        except Exception:
            return False

    def __repr__(self) -> str:
        return f"Static(value={self.value!r})"


@dataclasses.dataclass(frozen=True)
class LeafDef:
    """A state leaf (an array) at this position."""


LEAF = LeafDef()


@dataclasses.dataclass(frozen=True, eq=False)
class VariableDef:
    """A Variable seen for the first time: its type, index and metadata.

    ``metadata`` keeps the Variable's key order (restored by merge); equality and
    hashing ignore that order, which a merge or ``set_metadata`` can change.
    """

    type: type
    index: int
    metadata: tuple[tuple[str, _Static], ...]

    def __post_init__(self) -> None:
        key = (self.type, self.index, tuple(sorted(self.metadata, key=lambda item: item[0])))
        object.__setattr__(self, "_key", key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VariableDef) and self._key == other._key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key)  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class VariableRef:
    """A Variable already seen at ``index``."""

    index: int


@dataclasses.dataclass(frozen=True)
class NodeRef:
    """A Pytree already seen at ``index``."""

    type: type
    index: int


@dataclasses.dataclass(frozen=True)
class NodeDef:
    """A Pytree seen for the first time: type, index and ``(key, is_data, definition)`` per attribute (sorted)."""

    type: type
    index: int
    attributes: tuple[tuple[Key, bool, tp.Any], ...]


@dataclasses.dataclass(frozen=True)
class ContainerDef:
    """A list / tuple / dict / other JAX pytree container, rebuilt from ``treedef``."""

    treedef: tp.Any
    children: tuple[tuple[Key, tp.Any], ...]


@dataclasses.dataclass(frozen=True)
class TreeDef:
    """Tree mode: the ``PyTreeDef`` (Variables as leaves) and the NNX path of each leaf."""

    treedef: tp.Any
    paths: tuple[PathParts, ...]


@dataclasses.dataclass(frozen=True, repr=False)
class GraphDef(tp.Generic[A]):
    """The structure of a graph (or tree): everything but its state leaves."""

    root: tp.Any
    num_leaves: int

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.root, self.num_leaves))
            object.__setattr__(self, "_hash", cached)
        return cached  # type: ignore[no-any-return]

    def apply(self, state: tp.Any, *states: tp.Any, graph: bool | None = None) -> ApplyCaller:
        """An object whose method calls run on ``merge(self, state, ...)`` and return ``(out, (graphdef, state))``.

        ``graph`` picks the mode of the split that follows the call (see :func:`split`).
        """
        return ApplyCaller(self, (state, *states), graph=graph)

    def merge(self, state: tp.Any, /, *states: tp.Any) -> A:
        return merge(self, state, *states)

    @property
    def type(self) -> type:
        root = self.root
        if isinstance(root, (NodeDef, NodeRef, VariableDef)):
            return root.type
        if isinstance(root, TreeDef):
            return type(jax.tree_util.tree_unflatten(root.treedef, [None] * root.treedef.num_leaves))
        return type(None)

    def __repr__(self) -> str:
        return f"GraphDef({_def_repr(self.root)}, num_leaves={self.num_leaves})"


def _def_repr(d: tp.Any) -> str:
    if isinstance(d, NodeDef):
        attrs = ", ".join(
            f"{k!r}: {_def_repr(c) if data else repr(c)}" for k, data, c in d.attributes
        )
        return f"NodeDef(type={d.type.__name__}, index={d.index}, attributes={{{attrs}}})"
    if isinstance(d, VariableDef):
        return f"VariableDef(type={d.type.__name__}, index={d.index})"
    if isinstance(d, ContainerDef):
        return f"ContainerDef({', '.join(f'{k!r}: {_def_repr(c)}' for k, c in d.children)})"
    if isinstance(d, TreeDef):
        return f"TreeDef(treedef={d.treedef}, paths={d.paths})"
    return repr(d)


jax.tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)


class RefMap(dict):  # type: ignore[type-arg]
    """A dict keyed by object identity: object -> index (keeps the objects alive)."""

    def __init__(self) -> None:
        super().__init__()
        self.objects: dict[int, tp.Any] = {}

    def __contains__(self, obj: object) -> bool:
        return super().__contains__(id(obj))

    def __getitem__(self, obj: tp.Any) -> int:
        return super().__getitem__(id(obj))

    def __setitem__(self, obj: tp.Any, index: int) -> None:
        self.objects[id(obj)] = obj
        super().__setitem__(id(obj), index)


# ---------------------------------------------------------------- flatten


class _FlattenContext:
    """One traversal: ``ref_index`` gives objects their (possibly pre-assigned) indices,
    ``visited`` says which were already reached in this traversal."""

    def __init__(self, ref_index: RefMap | None) -> None:
        self.ref_index = RefMap() if ref_index is None else ref_index
        self.next_index = max(self.ref_index.values(), default=-1) + 1
        self.visited: set[int] = set()
        self.leaves: list[tuple[PathParts, tp.Any]] = []

    def seen(self, obj: tp.Any) -> bool:
        return id(obj) in self.visited

    def new_index(self, obj: tp.Any) -> int:
        self.visited.add(id(obj))
        if obj in self.ref_index:
            return self.ref_index[obj]
        index = self.next_index
        self.ref_index[obj] = index
        self.next_index += 1
        return index


def _graph_flatten(node: tp.Any, path: PathParts, ctx: _FlattenContext) -> tp.Any:
    if isinstance(node, Variable):
        if ctx.seen(node):
            return VariableRef(ctx.ref_index[node])
        index = ctx.new_index(node)
        ctx.leaves.append((path, node))
        metadata = tuple((k, _Static(v)) for k, v in node.get_metadata().items())
        return VariableDef(type(node), index, metadata)
    if isinstance(node, Pytree):
        if ctx.seen(node):
            return NodeRef(type(node), ctx.ref_index[node])
        index = ctx.new_index(node)
        attributes = tuple(
            (key, True, _graph_flatten(value, (*path, key), ctx)) if data else (key, False, _Static(value))
            for key, value, data in _pytree_children(node)
        )
        return NodeDef(type(node), index, attributes)
    if reprlib.is_array(node):
        ctx.leaves.append((path, node))
        return LEAF
    if _is_container(node):
        children, treedef = _one_level(node)
        return ContainerDef(
            treedef, tuple((key, _graph_flatten(child, (*path, key), ctx)) for key, child in children)
        )
    return _Static(node)


def _tree_flatten(node: tp.Any, api: str) -> tuple[TreeDef, list[tuple[PathParts, tp.Any]]]:
    pairs, treedef = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x: isinstance(x, Variable))
    leaves = [(tuple(jax_key(e) for e in path), leaf) for path, leaf in pairs]
    _check_no_shared_variables(leaves, pairs, api)
    return TreeDef(treedef, tuple(p for p, _ in leaves)), leaves


def _check_no_shared_variables(
    leaves: list[tuple[PathParts, tp.Any]], pairs: list[tuple[tp.Any, tp.Any]], api: str
) -> None:
    seen: dict[int, list[str]] = {}
    for (_, leaf), (jax_path, _) in zip(leaves, pairs):
        if isinstance(leaf, Variable):
            seen.setdefault(id(leaf), []).append(jax.tree_util.keystr(tuple(jax_path)))
    for id_, paths in seen.items():
        if len(paths) > 1:
            variable = next(leaf for _, leaf in leaves if id(leaf) == id_)
            listing = "\n".join(f"  - {p}" for p in paths)
            raise ValueError(
                f"Duplicate {variable!r}\nfound at paths:\n\n{listing}\n\n"
                f"Variable at {paths[1]} was already seen at {paths[0]}. "
                "Tree mode (graph=False) does not support shared references. Consider the following "
                "options:\n\n1. Remove the duplicates and guarantee a tree structure.\n"
                f"2. Enable graph mode by passing graph=True to {api} e.g.\n\n"
                f"  nnx.{api}(..., graph=True)\n\n3. Use nnx.compat.{api} instead e.g.\n\n"
                f"  nnx.compat.{api}(...)"
            )


def flatten(
    node: A,
    /,
    *,
    with_paths: bool = True,
    ref_index: RefMap | None = None,
    ref_outer_index: RefMap | None = None,
    graph: bool | None = None,
) -> tuple[GraphDef[A], FlatState | list[tp.Any]]:
    """Splits ``node`` into its GraphDef and its flat state (or plain leaves without paths).

    The plain leaves come in flatten order (the order ``unflatten`` consumes a list in);
    the flat state is sorted by path.
    """
    gdef, flat = _flatten_for(node, graph, "flatten", ref_index, sort=with_paths)
    if with_paths:
        return gdef, flat
    return gdef, list(flat.leaves)


# ---------------------------------------------------------------- unflatten


class _UnflattenContext:
    """Where the leaves come from: a path -> leaf mapping, or an iterator of leaves in
    flatten order."""

    def __init__(
        self,
        leaves: dict[PathParts, tp.Any] | tp.Iterator[tp.Any],
        index_ref: dict[int, tp.Any] | None,
        copy: bool,
    ) -> None:
        self.leaves = leaves
        self.index_ref: dict[int, tp.Any] = {} if index_ref is None else index_ref
        self.copy = copy

    def leaf(self, path: PathParts) -> tp.Any:
        leaves = self.leaves
        if not isinstance(leaves, dict):
            return next(leaves)
        if path not in leaves:
            raise ValueError(f"The state has no leaf at path {path} that the GraphDef expects.")
        return leaves[path]


def _graph_unflatten(d: tp.Any, path: PathParts, ctx: _UnflattenContext) -> tp.Any:
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
        internals = {k: v for k, v in vars(node).items() if isinstance(k, str) and k.startswith("_pytree__")}
        node.__dict__.clear()
        node.__dict__.update(internals)
        object.__setattr__(node, NODES, status)
        node.__dict__.update(values)
        return node
    if isinstance(d, ContainerDef):
        children = [_graph_unflatten(child, (*path, key), ctx) for key, child in d.children]
        return jax.tree_util.tree_unflatten(d.treedef, children)
    if isinstance(d, LeafDef):
        return ctx.leaf(path)
    if isinstance(d, _Static):
        return d.value
    raise TypeError(f"Unknown node definition {d!r} at path {path}")


def _collect_leaves(states: tp.Sequence[tp.Any]) -> list[tuple[PathParts, tp.Any]]:
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


def unflatten(
    graphdef: GraphDef[A],
    state: tp.Any,
    /,
    *,
    index_ref: dict[int, tp.Any] | None = None,
    outer_index_outer_ref: dict[int, tp.Any] | None = None,
    copy_variables: bool = False,
    recreate_variables: bool = True,
) -> A:
    """Rebuilds an object from its GraphDef and state (State, FlatState, or leaves in order)."""
    if isinstance(state, list):
        if len(state) != graphdef.num_leaves:
            _raise_leaf_count(graphdef, len(state))
        return _unflatten_values(graphdef, state, index_ref, copy_variables)
    return _unflatten_leaves(graphdef, _collect_leaves([state]), index_ref, copy_variables)


def _raise_leaf_count(graphdef: GraphDef[tp.Any], got: int) -> tp.NoReturn:
    raise ValueError(
        f"Incorrect number of leaves, expected {graphdef.num_leaves} leaves, but got {got}."
    )


def _unflatten_leaves(
    graphdef: GraphDef[A], leaves: list[tuple[PathParts, tp.Any]], index_ref: dict[int, tp.Any] | None, copy: bool
) -> A:
    if len(leaves) != graphdef.num_leaves:
        _raise_leaf_count(graphdef, len(leaves))
    root = graphdef.root
    by_path = dict(leaves)
    if isinstance(root, TreeDef):
        missing = [p for p in root.paths if p not in by_path]
        if missing:
            raise ValueError(f"The state has no leaf at path {missing[0]} that the GraphDef expects.")
        return _unflatten_values(graphdef, [by_path[p] for p in root.paths], index_ref, copy)
    return _graph_unflatten(root, (), _UnflattenContext(by_path, index_ref, copy))  # type: ignore[no-any-return]


def _unflatten_values(
    graphdef: GraphDef[A], values: list[tp.Any], index_ref: dict[int, tp.Any] | None, copy: bool
) -> A:
    """Rebuilds from the leaves in flatten order (their number already checked)."""
    root = graphdef.root
    if isinstance(root, TreeDef):
        if copy:
            values = [v.copy() if isinstance(v, Variable) else v for v in values]
        return jax.tree_util.tree_unflatten(root.treedef, values)  # type: ignore[no-any-return]
    return _graph_unflatten(root, (), _UnflattenContext(iter(values), index_ref, copy))  # type: ignore[no-any-return]


# ---------------------------------------------------------------- public API


def _group(states: list[State], filters: tp.Sequence[tp.Any]) -> tp.Any:
    return states[0] if len(filters) <= 1 else tuple(states)


def split(node: A, *filters: tp.Any, graph: bool | None = None) -> tuple[tp.Any, ...]:
    """``(graphdef, state, ...)``: the structure, then one State per filter (each leaf to the first match)."""
    gdef, flat = _flatten_for(node, graph, "split")
    filters = filters or (...,)
    groups = split_flat(flat, filters, exhaustive=True)
    return (gdef, *(_split_state(g) for g in groups))


def _split_state(flat: FlatState) -> tp.Any:
    """The State of one split group; a Variable split at the root is its own state."""
    entries = list(flat)
    if len(entries) == 1 and entries[0][0] == ():
        return entries[0][1]
    return from_flat_state(flat)


def _flatten_for(
    node: tp.Any, graph: bool | None, api: str, ref_index: RefMap | None = None, *, sort: bool = True
) -> tuple[GraphDef[tp.Any], FlatState]:
    """Flattens ``node`` into its GraphDef and its ``(path, leaf)`` pairs: sorted by path,
    or in flatten order (depth-first; not always path order, e.g. for namedtuples) when
    ``sort`` is false. ``api`` names the caller in tree-mode errors; ``ref_index`` (graph
    mode) is filled with object -> index."""
    if resolve_graph(graph):
        ctx = _FlattenContext(ref_index)
        root = _graph_flatten(node, (), ctx)
        leaves = ctx.leaves
    else:
        root, leaves = _tree_flatten(node, api)
    return GraphDef(root, len(leaves)), FlatState(leaves, sort=sort)


def merge(graphdef: GraphDef[A], /, *states: tp.Any, copy: bool = False, recreate_variables: bool = True) -> A:
    """Rebuilds the object described by ``graphdef`` from one or more States."""
    if isinstance(graphdef, tuple) and len(graphdef) == 2 and isinstance(graphdef[0], GraphDef):
        graphdef, first = graphdef
        states = (first, *states)
    if isinstance(graphdef, GraphState) and graphdef.graphdef is not None:
        graphdef, states = graphdef.graphdef, (graphdef, *states)
    if not isinstance(graphdef, GraphDef):
        raise TypeError(f"Expected a GraphDef or GraphState object, got: {graphdef!r}")
    return _unflatten_leaves(graphdef, _collect_leaves(states), None, copy)


def state(node: tp.Any, *filters: tp.Any, graph: bool | None = None) -> tp.Any:
    """The State of ``node``'s Variables (and arrays); one State per filter when filters are given."""
    _, flat = _flatten_for(node, graph, "state")
    if not filters:
        return from_flat_state(flat)
    groups = split_flat(flat, filters, exhaustive=False)
    return _group([from_flat_state(g) for g in groups], filters)


variables = state


def graphdef(node: tp.Any, /, *, graph: bool | None = None) -> GraphDef[tp.Any]:
    """The GraphDef of ``node``."""
    return _flatten_for(node, graph, "graphdef")[0]


def update(node: tp.Any, state: tp.Any, /, *states: tp.Any) -> None:
    """Writes the leaves of ``state`` (and ``states``) into ``node``'s Variables, in place."""
    for path, leaf in _collect_leaves((state, *states)):
        _set_at_path(node, path, leaf)


def _child(node: tp.Any, key: Key) -> tp.Any:
    if isinstance(node, Pytree):
        return node.__dict__[key]
    if isinstance(node, (list, tuple)) and isinstance(key, int):
        return node[key]
    if isinstance(node, tp.Mapping):
        return node[key]
    return dict(_one_level(node)[0])[key]


def _set_at_path(node: tp.Any, path: PathParts, leaf: tp.Any) -> None:
    parent = node
    for i, key in enumerate(path[:-1]):
        try:
            parent = _child(parent, key)
        except (KeyError, IndexError, TypeError) as e:
            raise ValueError(
                f"Cannot update {type(node).__name__}: no attribute at path {path[: i + 1]} "
                f"(on the way to {path})."
            ) from e
    key = path[-1]
    try:
        current = _child(parent, key)
    except (KeyError, IndexError, TypeError):
        current = None
    if isinstance(current, Variable):
        if isinstance(leaf, Variable):
            current.update_from_state(leaf)
        else:
            current.set_raw_value(leaf)
    elif isinstance(parent, Pytree):
        parent._setattr(key, leaf)
    elif isinstance(parent, (list, dict)):
        parent[key] = leaf  # type: ignore[index]
    else:
        raise ValueError(
            f"Cannot update the value at path {path} of {type(node).__name__}: "
            f"its parent {type(parent).__name__} is immutable."
        )


def clone(node: A, variables: bool = True, *, arrays: bool = False, graph: bool | None = None) -> A:
    """A copy of ``node`` with new Variables (and new arrays if ``arrays``), same structure."""
    gdef, flat = _flatten_for(node, graph, "clone")
    leaves = []
    for path, leaf in flat:
        if isinstance(leaf, Variable) and (variables or arrays):
            leaf = leaf.copy()  # keeps the Variable's type, metadata and hooks
            if arrays:
                leaf.set_raw_value(_copy_arrays(leaf.get_raw_value()))
        elif arrays:
            leaf = _copy_arrays(leaf)
        leaves.append((path, leaf))
    return _unflatten_leaves(gdef, leaves, None, False)


def _copy_arrays(tree: tp.Any) -> tp.Any:
    """``tree`` with each array replaced by a copy (other leaves kept)."""
    return jax.tree.map(lambda x: x.copy() if hasattr(x, "copy") and reprlib.is_array(x) else x, tree)


def pop(node: tp.Any, *filters: tp.Any) -> tp.Any:
    """Removes the Variables matching ``filters`` from ``node`` and returns them as States."""
    if not filters:
        raise ValueError("Expected at least one filter")
    _, flat = _flatten_for(node, True, "pop")
    groups = split_flat(flat, filters, exhaustive=False)
    for group in groups:
        for path, _ in group:
            parent = node
            for key in path[:-1]:
                parent = _child(parent, key)
            if isinstance(parent, Pytree):
                delattr(parent, path[-1]) if isinstance(path[-1], str) else parent.__dict__.pop(path[-1])
            else:
                del parent[path[-1]]
    return _group([from_flat_state(g) for g in groups], filters)


def iter_graph(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    """Every node and leaf reachable from ``node`` (each once), children before parents."""
    if resolve_graph(graph):
        yield from _iter_graph(node, (), set())
    else:
        yield from _iter_tree(node, ())


def _children_of(node: tp.Any) -> list[tuple[Key, tp.Any]]:
    if isinstance(node, Pytree):
        return [(k, v) for k, v, data in _pytree_children(node) if data]
    if _is_container(node):
        return _one_level(node)[0]
    return []


def _iter_items(node: tp.Any) -> list[tuple[Key, tp.Any, bool]]:
    """``(key, value, walk_into)``: a Pytree's attributes (static ones too) or a container's children."""
    if isinstance(node, Pytree):
        internals = [(NODES, HashableMapping(node._pytree__nodes), False), ("_pytree__state", PytreeState(), False)]
        return sorted(
            [*internals, *_pytree_children(node)], key=lambda item: (isinstance(item[0], str), item[0])
        )
    return [(k, v, True) for k, v in _children_of(node)]


def _iter_graph(node: tp.Any, path: PathParts, seen: set[int]) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    if isinstance(node, (Pytree, Variable)):
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
    for key, child, walk in _iter_items(node):
        if walk:
            yield from _iter_tree(child, (*path, key))
        else:
            yield (*path, key), child
    yield path, node


def iter_children(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[Key, tp.Any]]:
    """The immediate children of ``node`` that are graph nodes (Pytrees) or Variables, as ``(key, child)``."""
    for key, child in _children_of(node):
        if isinstance(child, (Pytree, Variable)):
            yield key, child


def iter_module_children(node: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[Key, tp.Any]]:
    """The immediate child Modules of ``node``."""
    from .module import Module

    return ((k, c) for k, c in iter_children(node, graph=graph) if isinstance(c, Module))


def recursive_map(f: tp.Callable[[PathParts, tp.Any], tp.Any], node: tp.Any, /, *, graph: bool | None = None) -> tp.Any:
    """Rebuilds ``node`` bottom-up, replacing every node and leaf ``x`` at ``path`` by ``f(path, x)``."""
    cache: dict[int, tp.Any] = {}
    use_graph = resolve_graph(graph)

    def visit(x: tp.Any, path: PathParts) -> tp.Any:
        if use_graph and isinstance(x, (Pytree, Variable)) and id(x) in cache:
            return cache[id(x)]
        if isinstance(x, Pytree):
            new = object.__new__(type(x))
            if use_graph:
                cache[id(x)] = new
            object.__setattr__(new, NODES, dict(x._pytree__nodes))
            object.__setattr__(new, TRACE_STATE, current_trace_state())
            for key, value, data in _pytree_children(x):
                new.__dict__[key] = visit(value, (*path, key)) if data else f((*path, key), value)
        elif _is_container(x):
            children, treedef = _one_level(x)
            new = jax.tree_util.tree_unflatten(treedef, [visit(c, (*path, k)) for k, c in children])
        else:
            new = x
        result = f(path, new)
        if use_graph and isinstance(x, (Pytree, Variable)):
            cache[id(x)] = result
        return result

    return visit(node, ())


def find_duplicates(node: tp.Any, /, *, only: tp.Any = ...) -> list[list[PathParts]]:
    """Groups of paths that reach the same Pytree or Variable (matching ``only``)."""
    from .filterlib import to_predicate

    predicate = to_predicate(only)
    paths: dict[int, list[PathParts]] = {}

    def visit(x: tp.Any, path: PathParts, stack: set[int]) -> None:
        if isinstance(x, (Pytree, Variable)):
            if predicate(path, x):
                paths.setdefault(id(x), []).append(path)
            if id(x) in stack or len(paths.get(id(x), ())) > 1:
                return
            stack = stack | {id(x)}
        for key, child in _children_of(x):
            visit(child, (*path, key), stack)

    visit(node, (), set())
    return [p for p in paths.values() if len(p) > 1]


def map(f: tp.Callable[[PathParts, tp.Any], tp.Any], node: A, /, *, graph: bool | None = None, recreate_variables: bool = True) -> A:
    """A copy of ``node`` whose state leaves are ``f(path, leaf)``."""
    gdef, flat = _flatten_for(node, graph, "map")
    return _unflatten_leaves(gdef, [(p, f(p, v)) for p, v in flat], None, False)


def set_metadata(node: tp.Any, /, *, only: tp.Any = Variable, **metadata: tp.Any) -> None:
    """Sets ``metadata`` on every Variable of ``node`` that matches ``only``."""
    from .filterlib import to_predicate

    predicate = to_predicate(only)
    for path, x in iter_graph(node):
        if isinstance(x, Variable) and predicate(path, x):
            x.set_metadata(**metadata)


def unpack(node: A, *filters: tp.Any, graph: bool | None = None) -> tp.Any:
    """``split`` returning one :class:`GraphState` (state + graphdef) per filter, ready for ``merge``."""
    gdef, *states = split(node, *(filters or (...,)), graph=graph)
    graph_states = tuple(GraphState(s.raw_mapping, _copy=False, graphdef=gdef) for s in states)
    return graph_states[0] if len(graph_states) == 1 else graph_states


def pure(tree: A) -> A:
    """``tree`` with every Variable replaced by its plain value."""
    return jax.tree.map(
        lambda x: x.get_value() if isinstance(x, Variable) else x, tree, is_leaf=lambda x: isinstance(x, Variable)
    )


as_pure = pure


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
    """A copy of ``node`` whose Variables (matching ``only``) have the given hijax/ref settings."""
    from .filterlib import to_predicate

    predicate = to_predicate(only)
    if not allow_duplicates:
        duplicates = find_duplicates(node, only=Variable)
        if duplicates:
            raise ValueError(
                f"Found duplicate Variables at paths {duplicates}; pass allow_duplicates=True to allow them."
            )
    updates = {k: v for k, v in (("hijax", hijax), ("ref", ref), ("mutable", mutable)) if v is not None}

    def convert(path: PathParts, x: tp.Any) -> tp.Any:
        if not isinstance(x, Variable) or not predicate(path, x):
            return x
        metadata = _with_mutability({**x.get_metadata(), **updates})
        value = x.get_value()
        return type(x)._new(_as_ref(value) if _wants_ref(metadata) else value, metadata)

    if resolve_graph(None) and is_node(node):
        return map(convert, node)
    return jax.tree_util.tree_map_with_path(  # type: ignore[no-any-return]
        lambda p, x: convert(tuple(jax_key(e) for e in p), x), node, is_leaf=lambda x: isinstance(x, Variable)
    )


vars_as = with_vars


def _with_mutability(metadata: dict[str, tp.Any]) -> dict[str, tp.Any]:
    """Applies a ``mutable`` request: an immutable Variable drops its Ref and remembers it
    (``had_ref``); a mutable one gets it back, and ``mutable=True`` is the default, so it is not kept."""
    if metadata.get("mutable") is False and metadata.get("ref"):
        metadata.update(ref=False, had_ref=True)
    elif metadata.get("mutable") is True:
        del metadata["mutable"]
        if metadata.pop("had_ref", False):
            metadata["ref"] = True
    return metadata


# ---------------------------------------------------------------- call / cached_partial


class ApplyCaller:
    """``caller.method(*args)`` merges, calls, and returns ``(out, (graphdef, state))``."""

    def __init__(
        self,
        graphdef: GraphDef[tp.Any],
        states: tuple[tp.Any, ...],
        path: tuple[tp.Any, ...] = (),
        graph: bool | None = None,
    ) -> None:
        self._graphdef, self._states, self._path, self._graph = graphdef, states, path, graph

    def __getattr__(self, name: str) -> ApplyCaller:
        if name.startswith("__"):
            raise AttributeError(name)
        return ApplyCaller(self._graphdef, self._states, (*self._path, name), self._graph)

    def __getitem__(self, key: tp.Any) -> ApplyCaller:
        return ApplyCaller(self._graphdef, self._states, (*self._path, _Item(key)), self._graph)

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tuple[tp.Any, tuple[GraphDef[tp.Any], State]]:
        node = merge(self._graphdef, *self._states)
        method = node
        for name in self._path:
            method = method[name.key] if isinstance(name, _Item) else getattr(method, name)
        out = method(*args, **kwargs)
        gdef, new_state = split(node, graph=self._graph)
        return out, (gdef, new_state)


@dataclasses.dataclass(frozen=True)
class _Item:
    """A ``[key]`` step in an :class:`ApplyCaller` path."""

    key: tp.Any


def call(graphdef_state: tuple[GraphDef[A], State], /) -> ApplyCaller:
    """``call((graphdef, state)).method(*args)`` -> ``(out, (graphdef, state))``, functionally."""
    graphdef, state = graphdef_state
    return ApplyCaller(graphdef, (state,))


def cached_partial(
    f: tp.Callable[..., tp.Any], *cached_args: tp.Any, graph: bool | None = None, graph_updates: bool | None = None
) -> tp.Callable[..., tp.Any]:
    """``functools.partial(f, *cached_args)``; the graph structure of the arguments is computed once."""
    return functools.partial(f, *cached_args)


# ---------------------------------------------------------------- update contexts


class UpdateContext:
    """Keeps object identities across a split -> (transform) -> merge round trip.

    The outer ``split`` records ``outer_ref_index`` (object -> index); the inner
    ``merge`` records ``inner_index_ref`` (index -> new object); the inner ``split``
    reuses those indices for the inner objects; the outer ``merge`` maps indices back
    to the outer objects and updates them in place.
    """

    def __init__(self, tag: tp.Hashable) -> None:
        self.tag = tag
        self.outer_ref_index: RefMap | None = None
        self.inner_index_ref: dict[int, tp.Any] | None = None

    def split(self, node: A, *filters: tp.Any) -> tuple[tp.Any, ...]:
        ref_index = RefMap()
        if self.inner_index_ref is not None:
            for index, obj in self.inner_index_ref.items():
                ref_index[obj] = index
            self.inner_index_ref = None
        else:
            self.outer_ref_index = ref_index
        gdef, flat = _flatten_for(node, True, "split", ref_index)
        groups = split_flat(flat, filters or (...,), exhaustive=True)
        return (gdef, *(from_flat_state(g) for g in groups))

    def merge(self, graphdef: GraphDef[A], state: tp.Any, /, *states: tp.Any, inner: bool | None = None) -> A:
        if inner is None:  # whether this merge is inside the transform or back outside
            raise ValueError("inner_merge must be specified when using ctxtag")
        leaves = _collect_leaves((state, *states))
        if inner:
            index_ref: dict[int, tp.Any] = {}
            node = _unflatten_leaves(graphdef, leaves, index_ref, False)
            self.inner_index_ref = index_ref
            return node
        outer = self.outer_ref_index or RefMap()
        index_ref = {index: outer.objects[id_] for id_, index in dict.items(outer)}
        node = _unflatten_leaves(graphdef, leaves, index_ref, False)
        self.outer_ref_index = None
        return node


class _ContextStacks(threading.local):
    def __init__(self) -> None:
        self.stacks: dict[tp.Hashable, list[UpdateContext]] = {}


_CONTEXTS = _ContextStacks()


class UpdateContextManager(contextlib.ContextDecorator):
    """``update_context(tag)``: activates a new :class:`UpdateContext` (context manager or decorator)."""

    def __init__(self, tag: tp.Hashable) -> None:
        self.tag = tag

    def __enter__(self) -> UpdateContext:
        ctx = UpdateContext(self.tag)
        _CONTEXTS.stacks.setdefault(self.tag, []).append(ctx)
        return ctx

    def __exit__(self, *exc: tp.Any) -> None:
        _CONTEXTS.stacks[self.tag].pop()


def update_context(tag: tp.Hashable) -> UpdateContextManager:
    """Creates an UpdateContext manager for ``tag`` (see :class:`UpdateContext`)."""
    return UpdateContextManager(tag)


def current_update_context(tag: tp.Hashable) -> UpdateContext:
    """The innermost active UpdateContext for ``tag``."""
    stack = _CONTEXTS.stacks.get(tag)
    if not stack:
        raise ValueError(f"No update context found for tag '{tag}'.")
    return stack[-1]


class SplitContext:
    """What ``split_context(tag)`` yields: ``ctx.split(node, *filters)``."""

    def __init__(self, ctx: UpdateContext | None) -> None:
        self._ctx = ctx

    def split(self, node: A, *filters: tp.Any) -> tuple[tp.Any, ...]:
        return self._ctx.split(node, *filters) if self._ctx else split(node, *filters, graph=True)


class MergeContext:
    """What ``merge_context(tag, inner)`` yields: ``ctx.merge(graphdef, *states)``."""

    def __init__(self, ctx: UpdateContext | None, inner: bool | None) -> None:
        self._ctx, self._inner = ctx, inner

    def merge(self, graphdef: GraphDef[A], state: tp.Any, /, *states: tp.Any) -> A:
        if self._ctx is None:
            return merge(graphdef, state, *states)
        return self._ctx.merge(graphdef, state, *states, inner=self._inner)


@contextlib.contextmanager
def split_context(ctxtag: tp.Hashable | None = None) -> tp.Iterator[SplitContext]:
    """Yields a SplitContext tied to the active UpdateContext of ``ctxtag`` (if any)."""
    stack = _CONTEXTS.stacks.get(ctxtag) if ctxtag is not None else None
    yield SplitContext(stack[-1] if stack else None)


@contextlib.contextmanager
def merge_context(ctxtag: tp.Hashable | None = None, inner: bool | None = None) -> tp.Iterator[MergeContext]:
    """Yields a MergeContext tied to the active UpdateContext of ``ctxtag`` (if any)."""
    stack = _CONTEXTS.stacks.get(ctxtag) if ctxtag is not None else None
    yield MergeContext(stack[-1] if stack else None, inner)


# The pytree view of graph nodes lives in extract (flax's nnx.extract); re-exported here.
from .extract import NodeStates, from_tree, prefix, to_tree  # noqa: E402
