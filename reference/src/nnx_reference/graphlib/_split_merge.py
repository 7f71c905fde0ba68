"""GraphDef and the round trip through it: split / flatten a graph, merge / unflatten it back."""

from __future__ import annotations

import dataclasses
import typing as tp

import jax

from .. import reprlib
from ..statelib import FlatState, State, from_flat_state, sort_paths, split_flat
from ..variablelib import Variable
from ._defs import (
    RefMap,
    RootDefinition,
    TreeDef,
    def_repr,
    hashing_for_caches,
    hashing_leniently,
    leaf_paths,
)
from ._flatten import flatten_node
from ._mode import resolve_graph
from ._nodes import Key, PathParts
from ._unflatten import Reuse, collect_leaves, from_leaves, from_values

A = tp.TypeVar("A")
_NO_REUSE = Reuse()  # unflatten_leaves' default: Reuse is frozen, so one instance serves every call


class GraphState(tp.MutableMapping[Key, tp.Any]):
    """A node's State bundled with its GraphDef (what :func:`unpack` returns), ready for
    ``merge``: a mapping over the State, not a State itself, as flax's."""

    def __init__(self, _graphdef: GraphDef[tp.Any], _state: State) -> None:
        if not isinstance(_state, State):
            raise ValueError(f"Expected a State object, got {type(_state).__name__}")
        self._graphdef = _graphdef
        self._state = _state

    def __getattr__(self, name: str) -> tp.Any:
        if name in ("_state", "_graphdef"):  # not set yet (a copy being made): no State to ask
            raise AttributeError(name)
        return getattr(self._state, name)

    def __setattr__(self, name: str, value: tp.Any) -> None:
        """Its own two fields are attributes; any other attribute is an entry of its State, as flax's."""
        if name in ("_state", "_graphdef"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._state, name, value)

    def __getitem__(self, key: Key) -> tp.Any:
        return self._state[key]

    def __setitem__(self, key: Key, value: tp.Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: Key) -> None:
        del self._state[key]

    def __iter__(self) -> tp.Iterator[Key]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def __repr__(self) -> str:
        state = reprlib.indent_tail(repr(self._state), "  ")
        return f"GraphState(\n  _graphdef={self._graphdef!r},\n  _state={state}\n)"


def _graph_state_flatten(gs: GraphState) -> tuple[list[tuple[tp.Any, tp.Any]], tp.Any]:
    mapping = gs._state.raw_mapping
    keys = sorted(mapping, key=lambda k: (isinstance(k, str), k))
    return [(jax.tree_util.DictKey(k), mapping[k]) for k in keys], (tuple(keys), gs._graphdef)


jax.tree_util.register_pytree_with_keys(
    GraphState,
    _graph_state_flatten,
    lambda aux, children: GraphState(aux[1], State(dict(zip(aux[0], children)), _copy=False)),
)


class _Hash(tp.NamedTuple):
    """A graphdef's hash, and whether it holds no unhashable static value."""

    value: int
    strict: bool


@dataclasses.dataclass(frozen=True, repr=False)
class GraphDef(tp.Generic[A]):
    """The structure of a graph (or tree): everything but its state leaves."""

    root: RootDefinition
    num_leaves: int

    def __hash__(self) -> int:
        cached: _Hash | None = self.__dict__.get("_hash")
        if cached is None:
            try:
                cached = _Hash(hash((self.root, self.num_leaves)), strict=True)
            except TypeError:
                with hashing_for_caches():
                    cached = _Hash(hash((self.root, self.num_leaves)), strict=False)
            object.__setattr__(self, "_hash", cached)
        if not (cached.strict or hashing_leniently()):
            hash(self.root)  # raises the TypeError of the unhashable static value, as flax's
        return cached.value

    def apply(self, state: tp.Any, *states: tp.Any, graph: bool | None = None) -> ApplyCaller:
        """An object whose method calls run on ``merge(self, state, ...)`` and return ``(out, (graphdef, state))``.

        ``graph`` picks the mode of the split that follows the call (see :func:`split`).
        """
        return ApplyCaller(self, (state, *states), graph=graph)

    def merge(self, state: tp.Any, /, *states: tp.Any) -> A:
        return merge(self, state, *states)

    def __repr__(self) -> str:
        return f"GraphDef({def_repr(self.root)}, num_leaves={self.num_leaves})"


jax.tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)


def flatten(
    node: A,
    /,
    *,
    with_paths: bool = True,
    ref_index: RefMap | None = None,
    ref_outer_index: RefMap | None = None,
    graph: bool | None = None,
) -> tuple[GraphDef[A], FlatState | list[tp.Any]]:
    """Splits ``node`` into its GraphDef and its flat state, sorted by path (or, without
    paths, the leaves in that order; in graph mode the Variables' raw values).

    Graph mode: ``ref_index`` (object -> index) is filled with the objects reached, and
    an object already in it is a reference to its index, its state left out; an object
    in ``ref_outer_index`` has that map's index recorded as its outer index.
    """
    visited = None if ref_index is None else set(dict.keys(ref_index))
    gdef, flat = flatten_for(node, graph, "flatten", ref_index, visited=visited, ref_outer_index=ref_outer_index)
    if with_paths:
        return gdef, flat
    if isinstance(gdef.root, TreeDef):
        return gdef, list(flat.leaves)
    return gdef, [v.get_raw_value() if isinstance(v, Variable) else v for v in flat.leaves]


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
    """Rebuilds an object from its GraphDef and state (State, FlatState, or leaves in path order).

    ``index_ref`` (index -> object) is filled with the objects made; a Variable already in
    it is updated in place, a node already in it is a RuntimeError. A node or Variable
    whose outer index is in ``outer_index_outer_ref`` is that object, updated in place.
    """
    if isinstance(state, list):
        leaves = _in_path_order(graphdef, state)
    elif isinstance(state, (FlatState, tp.Mapping)):
        leaves = collect_leaves([state])
    else:
        raise ValueError(f"Unsupported state type: {type(state)}")
    reuse = Reuse(outer_index_outer_ref, in_place=False)
    return unflatten_leaves(graphdef, leaves, index_ref, copy_variables, recreate_variables, reuse)


def _in_path_order(graphdef: GraphDef[tp.Any], leaves: list[tp.Any]) -> list[tuple[PathParts, tp.Any]]:
    """A list of leaves paired with the GraphDef's leaf paths, in sorted path order."""
    if len(leaves) != graphdef.num_leaves:
        _raise_leaf_count(graphdef, len(leaves))
    return list(zip(sort_paths(leaf_paths(graphdef.root)), leaves))


def _raise_leaf_count(graphdef: GraphDef[tp.Any], got: int) -> tp.NoReturn:
    raise ValueError(f"Incorrect number of leaves, expected {graphdef.num_leaves} leaves, but got {got}.")


def unflatten_leaves(
    graphdef: GraphDef[A],
    leaves: list[tuple[PathParts, tp.Any]],
    index_ref: dict[int, tp.Any] | None,
    copy: bool,
    recreate_variables: bool = True,
    reuse: Reuse = _NO_REUSE,
) -> A:
    """Rebuilds the object of ``graphdef`` from ``(path, leaf)`` pairs, checking their number."""
    if len(leaves) != graphdef.num_leaves:
        _raise_leaf_count(graphdef, len(leaves))
    return from_leaves(graphdef.root, leaves, index_ref, copy, recreate_variables, reuse)  # type: ignore[no-any-return]


def flatten_into(node: A, ref_index: RefMap, *, with_paths: bool = True) -> tuple[GraphDef[A], tp.Any]:
    """Graph mode, for a transform's own bookkeeping: like :func:`flatten`, but an object
    already in ``ref_index`` is flattened again under its index (the inner objects keep
    their outer indices), and the leaves without paths are the Variables, in flatten order."""
    gdef, flat = flatten_for(node, True, "flatten", ref_index, sort=with_paths)
    return gdef, flat if with_paths else list(flat.leaves)


def unflatten_into(graphdef: GraphDef[A], state: tp.Any, index_ref: dict[int, tp.Any] | None) -> A:
    """The inverse of :func:`flatten_into`: a node already in ``index_ref`` is rebuilt in place."""
    if isinstance(state, list):
        if len(state) != graphdef.num_leaves:
            _raise_leaf_count(graphdef, len(state))
        return from_values(graphdef.root, state, index_ref, False)  # type: ignore[no-any-return]
    return unflatten_leaves(graphdef, collect_leaves([state]), index_ref, False)


def split(node: A, *filters: tp.Any, graph: bool | None = None) -> tuple[tp.Any, ...]:
    """``(graphdef, state, ...)``: the structure, then one State per filter (each leaf to the first match)."""
    gdef, flat = flatten_for(node, graph, "split")
    filters = filters or (...,)
    groups = split_flat(flat, filters, exhaustive=True)
    return (gdef, *(split_state(g) for g in groups))


def split_state(flat: FlatState) -> tp.Any:
    """The State of one split group; a Variable split at the root is its own state."""
    entries = list(flat)
    if len(entries) == 1 and entries[0][0] == ():
        return entries[0][1]
    return from_flat_state(flat)


def flatten_for(
    node: tp.Any,
    graph: bool | None,
    api: str,
    ref_index: RefMap | None = None,
    *,
    sort: bool = True,
    visited: set[int] | None = None,
    ref_outer_index: RefMap | None = None,
) -> tuple[GraphDef[tp.Any], FlatState]:
    """Flattens ``node`` into its GraphDef and its ``(path, leaf)`` pairs: sorted by path,
    or in flatten order (depth-first; not always path order, e.g. for namedtuples) when
    ``sort`` is false. ``api`` names the caller in tree-mode errors; ``ref_index`` (graph
    mode) is filled with object -> index, and ``visited`` with the ids of the objects reached,
    which a later flatten sharing both gives as references; ``ref_outer_index`` gives
    outer indices (see :func:`flatten`)."""
    root, leaves = flatten_node(node, resolve_graph(graph), api, ref_index, visited, ref_outer_index)
    return GraphDef(root, len(leaves)), FlatState(leaves, sort=sort)


def merge(graphdef: GraphDef[A], /, *states: tp.Any, copy: bool = False, recreate_variables: bool = True) -> A:
    """Rebuilds the object described by ``graphdef`` from one or more States, or from
    GraphStates alone (all of one GraphDef)."""
    if isinstance(graphdef, GraphState):
        graphdef, states = _graph_states_graphdef((graphdef, *states)), (graphdef, *states)
    states = tuple(s._state if isinstance(s, GraphState) else s for s in states)
    if not isinstance(graphdef, GraphDef):
        raise TypeError(f"Expected a GraphDef or GraphState object, got: {graphdef!r}")
    if not states:
        raise TypeError("merge() missing 1 required positional argument: 'state'")
    if any(isinstance(s, list) for s in states):
        return unflatten_leaves(graphdef, _listed_leaves(graphdef, states), None, copy, recreate_variables)
    return unflatten_leaves(graphdef, collect_leaves(states), None, copy, recreate_variables)


def _graph_states_graphdef(graph_states: tuple[tp.Any, ...]) -> GraphDef[tp.Any]:
    """The one GraphDef of the GraphStates merge was given (ValueError for anything else
    among them, or for GraphStates of two GraphDefs)."""
    for graph_state in graph_states:
        if not isinstance(graph_state, GraphState):
            raise ValueError(f"Expected GraphState object, got {type(graph_state)}")
        if graph_state._graphdef != graph_states[0]._graphdef:
            raise ValueError("GraphDef must be the same for all GraphState objects")
    return graph_states[0]._graphdef


def _listed_leaves(graphdef: GraphDef[tp.Any], states: tuple[tp.Any, ...]) -> list[tuple[PathParts, tp.Any]]:
    """A list given to :func:`merge` is the leaves in path order, and must be its only state
    (ValueError otherwise, as flax's where the list comes first)."""
    if len(states) > 1:
        raise ValueError(f"Only one state can be passed as a list, got {len(states)} states.")
    return _in_path_order(graphdef, states[0])


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
