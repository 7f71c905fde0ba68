"""Plain ``jit`` calls on a flat list of leaves, with one plan per argument structure.

A plain call (no shardings, no donation) whose graph objects form a tree needs no
lifting: Modules and Variables are pytrees, so the arguments flatten in one pass
(``jax.tree_util``) to arrays, and the compiled function rebuilds fresh copies
from them. While tracing, the function records which Variables it assigned; their
new values are the only ones it returns, so a call that mutates nothing writes
nothing back, except in graph mode with graph updates, which writes every Variable
(each holds a new array after the call, as in flax).

The flattening stops at the first Pytree reached twice, and a leaf reached twice
shows a shared Variable, so a shared object or a cycle goes to the general path
(``compilation.JitWrapped``), which handles sharing in graph mode and reports it in
tree mode. So does a structure with Refs (a compiled function returns none) or
hijax Variables (JAX types of their own, not pytrees).

In graph mode the function is traced as the general path traces it (lift, enter,
call, exit): when the call kept the structure of its objects (rebinding no attribute,
a plain array attribute included) and returns none of them, only the assigned values
come out; otherwise the trace returns the general path's :class:`lift.Result`, applied
to the caller's objects as that path would.

A call on the same objects as one of the last few, when nothing changed in their
structure since, skips the flattening: :mod:`.call_cache` reads the leaves straight
from the Variables the earlier call found.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import typing as tp

import jax
from jax.core import ShapedArray
from jax.tree_util import GetAttrKey

from .. import _hijax, _structure, graphlib, reprlib
from .._tracing import inside_transformation
from ..pytreelib import INTERNAL_PREFIX, NODES, Pytree, attribute_layout
from ..variablelib import Variable
from . import _lift as lift
from . import _output_places as output_places
from ._call_cache import CachedCall, Contents, cache_call, identities, nodes_of
from ._checks import check_no_aliasing
from ._statics import Statics, insert_statics
from ._trees import is_object, is_variable, reported_as

_MAX_PLANS = 256
"""Structures remembered per function; past this the plans are rebuilt as they come."""

_MAX_CACHED = 8
"""Calls (sets of argument objects) whose structure is kept per function, the oldest dropped first."""

_STRIKES = 2
"""Stale cached calls on one set of objects after which it is cached only with no structural change between calls."""


class NotHandled(Exception):
    """Raised while flattening or tracing when a call needs the general path."""


@dataclasses.dataclass(frozen=True)
class Assigned:
    """The positions, among the arguments' nodes in flatten order, of the Variables
    the function assigned, and the keys of the outcome's parts (a pytree without leaves:
    JAX caches it with the trace)."""

    positions: tuple[int, ...]
    places: output_places.Places


jax.tree_util.register_static(Assigned)


class Outcome(tp.NamedTuple):
    """What the compiled function returns: the output and the assigned values, or,
    for a graph-mode call that changed the structure of its objects or returns
    objects, the general path's result."""

    assigned: Assigned
    out: tp.Any
    values: list[tp.Any]
    general: lift.Result | None


output_places.register(
    Outcome,
    lambda o: (GetAttrKey("assigned"), o.assigned.places.output, o.assigned.places.updates, output_places.UNNAMED),
)


class Flat(tp.NamedTuple):
    """A call's arguments flattened: the leaves, their structure, and (in graph mode) every
    node met on the way (containers, objects, leaves) in flatten order."""

    leaves: list[tp.Any]
    treedef: jax.tree_util.PyTreeDef
    nodes: list[tp.Any]


def flatten_once(tree: tp.Any, *, graph: bool = True) -> Flat:
    """``jax.tree_util.tree_flatten`` of ``tree``; raises :class:`NotHandled` on a leaf
    reached twice (a shared Variable, or the same array passed twice). With ``graph`` it
    records every node met on the way and raises on a Pytree reached twice (shared, or a
    cycle) or a Pytree that is no JAX pytree. Tree mode records nothing (:func:`nodes_of`
    finds the nodes when they are needed): a Python call per node is most of a call's
    cost, and tree mode rejects shared objects and cycles anyway."""
    nodes: list[tp.Any] = []
    if graph:
        recorder = _guarded_recorder(nodes)
        leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=recorder.record)
        if recorder.stopped():
            raise NotHandled
    else:
        leaves, treedef = jax.tree_util.tree_flatten(tree)
    if len(set(map(id, leaves))) != len(leaves) or _hijax.any_hijax(leaves):
        raise NotHandled
    return Flat(leaves, treedef, nodes)


class _Recorder(tp.NamedTuple):
    """An ``is_leaf`` that records each node met, and whether it stopped at one."""

    record: tp.Callable[[tp.Any], bool]
    stopped: tp.Callable[[], bool]


def _guarded_recorder(nodes: list[tp.Any]) -> _Recorder:
    """An ``is_leaf`` that appends each node to ``nodes`` and stops at a Pytree seen before
    or one that is no JAX pytree by taking it (and every node after it) for a leaf: an
    exception raised through jaxlib's flatten would cost the thread a level of its C
    recursion budget per level of nesting, for good (jaxlib 0.12 on Python 3.12), and a
    program calls this on every call. A closure: an object's ``__call__`` costs twice as much."""
    pytrees: set[int] = set()
    stopped = False

    def record(x: tp.Any) -> bool:
        nonlocal stopped
        nodes.append(x)
        if isinstance(x, Pytree) and not stopped:
            stopped = id(x) in pytrees or not x._pytree__is_pytree
            pytrees.add(id(x))
        return stopped

    return _Recorder(record, lambda: stopped)


class PlanKey(tp.NamedTuple):
    """What a plan depends on: the flattened structure, the static arguments, the mode."""

    treedef: jax.tree_util.PyTreeDef
    statics: Statics
    mode: graphlib.Mode


class TreeJit:
    """The fast path of one jitted function: a compiled plan per argument structure."""

    def __init__(self, name: str, fun: tp.Callable, jit_kwargs: dict[str, tp.Any]):
        self.name = name
        self.fun = fun
        self.jit_kwargs = jit_kwargs
        self.plans: dict[PlanKey, jax.stages.Wrapped | None] = {}
        self.cached: dict[tuple[int, ...], CachedCall] = {}  # by the ids of the call's Pytree and Variable arguments
        self.uncacheable: set[PlanKey] = set()
        self.flattened: dict[tuple[int, ...], int] = {}  # the epoch of the last call that flattened, by argument ids
        self.strikes: dict[tuple[int, ...], int] = {}  # how often a cached call on these ids was found stale

    def call(
        self, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], statics: Statics, mode: graphlib.Mode
    ) -> tuple[bool, tp.Any]:
        """``(True, output)`` for a call handled here, ``(False, None)`` for the general path."""
        if inside_transformation():
            return False, None  # under a JAX trace the general path checks each Variable's trace
        call = (args, kwargs)
        ids = identities(args, kwargs)
        cached = self.cached.get(ids)
        if cached is not None:
            leaves = cached.leaves(args, kwargs, statics, mode)
            if leaves is not None:
                try:
                    outcome = cached.jitted(*leaves)
                except NotHandled:  # traced anew (new shapes) into a call the plan cannot take
                    pass
                else:
                    return True, self._result(outcome, call, mode, functools.partial(cached.targets, call))
            del self.cached[ids]
            self.strikes[ids] = self.strikes.get(ids, 0) + 1
        try:
            flat = flatten_once(call, graph=mode.graph)
        except NotHandled:
            return False, None
        key = PlanKey(flat.treedef, statics, mode)
        jitted = self.plans.get(key, False)
        if jitted is False:
            jitted = self._plan(key, flat)
        if jitted is None:
            return False, None
        try:
            outcome: Outcome = jitted(*flat.leaves)
        except NotHandled:
            self.plans[key] = None
            return False, None
        out = self._result(outcome, call, mode, lambda at: _at(flat.nodes if mode.graph else nodes_of(call), at))
        if mode.graph_updates:  # once: a cached call finds them in order
            for node in flat.nodes:
                if isinstance(node, Pytree):
                    _sort_attributes(node)
        if outcome.general is None:
            self._cache(key, call, ids, jitted)
        return True, out

    def _result(
        self,
        outcome: Outcome,
        call: tp.Any,
        mode: graphlib.Mode,
        targets: tp.Callable[[tuple[int, ...]], list[tp.Any]],
    ) -> tp.Any:
        """The call's output, once the assigned values (or the general path's result, for a
        graph-mode call that changed the structure of its objects) reach the caller's objects;
        ``targets`` gives the Variables of ``call`` at some positions among its nodes in flatten order."""
        if outcome.general is not None:
            lifted = lift.lift(self.name, call, None, mode, coalesce=True)
            return lift.apply(lifted, outcome.general)
        if outcome.assigned.positions:
            _write(targets(outcome.assigned.positions), outcome.values)
        return outcome.out

    def _cache(
        self,
        key: PlanKey,
        call: tuple[tuple[tp.Any, ...], dict[str, tp.Any]],
        ids: tuple[int, ...],
        jitted: tp.Callable,
    ) -> None:
        """Keeps the structure of a call that had to flatten, for the next call on the same
        objects, when this structure can be cached: from the second call on them that
        flattens; once a cached call on them has been found stale twice, only when there
        was no structural change since the last (objects made anew, or changed, before
        every call would be cached in vain)."""
        last = self.flattened.get(ids)
        again = last == _structure.epoch or (last is not None and self.strikes.get(ids, 0) < _STRIKES)
        if not again or key in self.uncacheable:
            if len(self.flattened) >= _MAX_PLANS:
                self.flattened.clear()
                self.strikes.clear()
            self.flattened[ids] = _structure.epoch
            return
        cached = cache_call(*call, key.statics, key.mode, jitted, self._release)
        if cached is None:
            self.uncacheable.add(key)
            return
        if len(self.cached) >= _MAX_CACHED:
            del self.cached[next(iter(self.cached))]
        self.cached[ids] = cached

    def _release(self, _: tp.Any) -> None:
        """Forgets the cached calls when an object of one is garbage collected (its id may be reused)."""
        self.cached = {}

    def _plan(self, key: PlanKey, flat: Flat) -> jax.stages.Wrapped | None:
        if len(self.plans) >= _MAX_PLANS:
            self.plans.clear()
            self.uncacheable.clear()
        pure = self._graph_pure(key) if key.mode.graph else self._tree_pure(key)
        jitted = None if any(map(reprlib.is_ref, flat.leaves)) else jax.jit(pure, **self.jit_kwargs)
        self.plans[key] = jitted
        return jitted

    def _tree_pure(self, key: PlanKey) -> tp.Callable[..., Outcome]:
        """The function of the flat leaves that jax.jit compiles for one tree-mode structure."""

        def pure(*leaves: tp.Any) -> Outcome:
            if not _plain(leaves):
                raise NotHandled
            dynamic = jax.tree_util.tree_unflatten(key.treedef, leaves)
            nodes = nodes_of(dynamic)
            before = [_raw(x) for x in nodes]
            args, kwargs = insert_statics(*dynamic, key.statics)
            out = self.fun(*args, **kwargs)
            if jax.tree_util.tree_structure(dynamic) != key.treedef:
                raise NotHandled  # a Variable's metadata changed: the general path writes it back
            variables, variables_def = jax.tree_util.tree_flatten(dynamic, is_leaf=is_variable)
            slots = tuple(i for i, x in enumerate(variables) if is_variable(x))
            check_no_aliasing(self.name, variables_def, slots, [variables[i] for i in slots], out)
            return _assigned(nodes, before, out, key.mode)

        return reported_as(self.fun, pure)

    def _graph_pure(self, key: PlanKey) -> tp.Callable[..., Outcome]:
        """The function of the flat leaves that jax.jit compiles for one graph-mode structure."""

        def pure(*leaves: tp.Any) -> Outcome:
            if not _plain(leaves):
                raise NotHandled
            copies = jax.tree_util.tree_unflatten(key.treedef, leaves)
            lifted = lift.lift(self.name, copies, None, key.mode, coalesce=True)
            entered = lift.enter(lifted.static, lifted.pure)
            start = flatten_once(entered.args)
            before = [_raw(x) for x in start.nodes]
            contents = Contents.of([x for x in start.nodes if isinstance(x, Pytree)], data=_every_value)
            args, kwargs = insert_statics(*entered.args, key.statics)
            out = self.fun(*args, **kwargs)
            if (
                start.treedef == key.treedef
                and contents is not None
                and contents.unchanged()  # any attribute rebound (a plain array included) is a graph update
                and _kept_structure(entered.args, start)
                and not _has_objects(out)
            ):
                return _assigned(start.nodes, before, out, key.mode)
            result = lift.exit(self.name, lifted.static, entered, out, None)  # coalesced: no prefixes to compare
            return Outcome(Assigned((), result.static.places), None, [], result)

        return reported_as(self.fun, pure)


def _every_value(node: Pytree) -> tuple[tp.Any, ...]:
    """All of ``node``'s attribute values: compared by identity, static ones included."""
    return tuple(vars(node).values())


def _plain(leaves: tuple[tp.Any, ...]) -> bool:
    """Whether every traced leaf is an array (no Ref): a cached call whose Variable now
    holds a value of another kind (a tuple, None, a Ref, a hijax Variable) reaches JAX
    as another structure or type, which it traces anew, and is refused here."""
    return all(isinstance(getattr(x, "aval", None), ShapedArray) for x in leaves)


def _sort_attributes(node: Pytree) -> None:
    """Puts ``node``'s attributes in the order a graph update that rebuilds it leaves them
    (flax's: sorted, internal ones first), unless they are in it already."""
    values = node.__dict__
    layout = attribute_layout(node).keys
    if [k for k in values if not (isinstance(k, str) and k.startswith(INTERNAL_PREFIX))] == [k for k, _ in layout]:
        return
    _structure.touched(node)
    internals = {k: v for k, v in values.items() if isinstance(k, str) and k.startswith(INTERNAL_PREFIX)}
    internals[NODES] = dict(layout)
    ordered = {k: values[k] for k, _ in layout}
    values.clear()
    values.update(internals)
    values.update(ordered)


def _at(nodes: tp.Sequence[tp.Any], positions: tuple[int, ...]) -> list[tp.Any]:
    return [nodes[i] for i in positions]


def _write(variables: list[Variable[tp.Any]], values: list[tp.Any]) -> None:
    """Sets the values the function assigned on the caller's Variables, as a write of
    flax's does (not through ``set_raw_value``); none is hijax (those take the general path),
    so each value is stored as it is."""
    collections.deque(map(object.__setattr__, variables, itertools.repeat("_raw_value"), values), maxlen=0)


def _raw(x: tp.Any) -> tp.Any:
    return x.get_raw_value() if is_variable(x) else None


def _assigned(nodes: list[tp.Any], before: list[tp.Any], out: tp.Any, mode: graphlib.Mode) -> Outcome:
    """The outcome of a call that kept its structure: the Variables whose value changed, or
    with graph updates all of them (graph updates write every input Variable back, as
    flax's do, so each holds a new array after the call)."""
    every = mode.graph and mode.graph_updates
    positions = tuple(
        i for i, (x, old) in enumerate(zip(nodes, before)) if is_variable(x) and (every or x.get_raw_value() is not old)
    )
    places = output_places.places("jit", mode.graph, mode.graph_updates)
    return Outcome(Assigned(positions, places), out, [nodes[i].get_raw_value() for i in positions], None)


def _kept_structure(tree: tp.Any, start: Flat) -> bool:
    """Whether ``tree`` still flattens as at ``start``, to the same objects."""
    try:
        now = flatten_once(tree)
    except NotHandled:
        return False
    same = (a is b for a, b in zip(now.nodes, start.nodes) if is_object(b))
    return now.treedef == start.treedef and all(same)


def _has_objects(tree: tp.Any) -> bool:
    return any(map(is_object, jax.tree_util.tree_leaves(tree, is_leaf=is_object)))
