"""``scan``: a loop over an axis of its inputs, graph nodes included.

The lifted inputs are planned (:class:`_ScanPlan`: each item carried, scanned
along its axis, or closed over), the body is built around the user's function
(:func:`_scan_body`), ``jax.lax.scan`` runs it, and its outputs are reassembled
into one call's result (:func:`_reassemble`) that ``lift.apply`` writes back.
"""

from __future__ import annotations

import dataclasses
import functools
import typing as tp

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import GetAttrKey

from .. import reprlib
from . import (
    _checks as checks,
)
from . import (
    _lift as lift,
)
from . import (
    _output_places as output_places,
)
from . import (
    _scan_axes as scan_axes,
)
from . import (
    _scan_carry as scan_carry,
)
from . import (
    _trees as trees,
)
from ._metadata_axes import axis_metadata, is_scanned
from ._traced import pure_function
from .iteration import Carry, StateAxes, expand_axes, out_objects, per_arg, reject_state_axes

__all__ = ["scan"]


def _move(tree: tp.Any, source: int, destination: int) -> tp.Any:
    """``tree`` with the axis ``source`` of every array moved to ``destination``."""
    if source == destination:
        return tree
    return jax.tree.map(lambda x: jnp.moveaxis(x, source, destination), tree)


class ScanOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`scan`."""

    length: int | None
    reverse: bool
    unroll: int | bool
    in_axes: tp.Any
    out_axes: tp.Any
    transform_metadata: tp.Mapping[str, tp.Any]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def scan(f: trees.Fn, /, **options: tp.Unpack[ScanOptions]) -> trees.Fn: ...
@tp.overload
def scan(**options: tp.Unpack[ScanOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def scan(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
    in_axes: tp.Any = (Carry, 0),
    out_axes: tp.Any = (Carry, 0),
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # read only
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.lax.scan``: arguments marked ``Carry`` are carried, ints are scanned.

    Graph nodes scanned along an axis have their updated state stacked back on
    it; carried graph node state is carried, and so is broadcast (``None``) state
    except with graph updates, where each step sees it unchanged and keeps none of its updates.
    """
    trees.reject_bound_method("scan", f)
    reject_state_axes("scan", in_axes, out_axes, graph, graph_updates)
    simple = not trees.resolve_mode(graph, graph_updates).graph_updates
    _check_single_carry(in_axes, "in_axes", simple)
    _check_single_carry(out_axes, "out_axes", simple)
    _check_axes_pair(in_axes, out_axes)

    def make(fun: tp.Callable) -> tp.Callable:
        mode = trees.resolve_mode(graph, graph_updates)  # fixed when applied, as flax's

        @functools.wraps(fun)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            if kwargs and not mode.graph_updates:  # only graph updates map keywords to positions
                name = next(iter(kwargs))
                raise TypeError(f"{wrapper.__qualname__}() got an unexpected keyword argument '{name}'")
            args = trees.positional(fun, args, kwargs, "with defaults" if mode.graph_updates else "keywords")
            if in_axes is Carry and len(args) != 1:
                raise ValueError(
                    f"When in_axes=Carry, the function must take exactly one argument, got {len(args)} arguments."
                )
            reject_state_axes("scan", in_axes, out_axes, *mode)
            arg_axes = per_arg(in_axes, args, "scan", mode.graph)
            if mode.graph_updates:
                scan_axes.check_fit(arg_axes, args, "args")
            lifted = lift.lift("scan", args, arg_axes, mode, expand=expand_axes, roots=(".args",))
            carry_arg = next((i for i, p in enumerate(arg_axes) if p is Carry), None)
            options = _LoopOptions(length, reverse, unroll, _split_transpose)
            moved = transform_metadata if mode.graph_updates else {}  # as flax's, only graph updates move it
            return _run_scan(fun, lifted, carry_arg, out_axes, moved, options)

        return wrapper

    return trees.decorator_or_call(f, make)


def _check_single_carry(axes: tp.Any, argname: str, simple: bool) -> None:
    """At most one entry of ``in_axes``/``out_axes`` may be ``Carry``, and only at the top
    level; the messages are those of flax's scan without graph updates (``simple``) or with."""
    paths = [p for p, leaf in jax.tree_util.tree_flatten_with_path(axes)[0] if leaf is Carry]
    for index, path in enumerate(paths):
        if len(path) > 1 and simple:
            raise ValueError(
                "Carry must be a top-level argument, it cannot be nested. "
                f"Found Carry inside {argname} at path {jax.tree_util.keystr(path)}"
            )
        if len(path) > 1:
            raise ValueError(f"Carry must at the top-level, it cannot be nested. Found axes={axes!r}")
        if index == 1 and not simple:
            first, second = (argname + jax.tree_util.keystr(p) for p in paths[:2])
            raise ValueError(f"Found multiple Carry definitions at {first} and {second}")
    if len(paths) > 1:
        raise ValueError(f"Found multiple Carry definitions in {argname}")


def _check_axes_pair(in_axes: tp.Any, out_axes: tp.Any) -> None:
    """Outputs are never broadcast nor carried by a ``StateAxes``, and ``Carry`` is on both
    sides or neither."""
    is_leaf = lambda x: x is None or isinstance(x, StateAxes)  # noqa: E731
    for path, leaf in jax.tree_util.tree_flatten_with_path(out_axes, is_leaf=is_leaf)[0]:
        where = f"out_axes{jax.tree_util.keystr(path)}"
        if leaf is None:
            raise ValueError(f"Cannot broadcast output state. Got out_axes=None at: {where}")
        for flt, axis in leaf.items() if isinstance(leaf, StateAxes) else ():
            if axis is None:
                raise ValueError(f"Cannot broadcast output state. Got StateAxes({{{flt}: None}}) at: {where}")
            if axis is Carry:
                raise ValueError(f"Cannot carry output state. Got StateAxes({{{flt}: Carry}}) at: {where}")
    has_carry = [Carry in jax.tree_util.tree_leaves(axes) for axes in (in_axes, out_axes)]
    if has_carry[0] != has_carry[1]:
        raise ValueError(
            "If one of in_axes or out_axes has Carry, the other must also have Carry. "
            f"Got in_axes={in_axes!r} and out_axes={out_axes!r}"
        )


@dataclasses.dataclass(frozen=True)
class _CarriedVariable:
    """One of the carry's own Variables, returned in the carry: by its index among the
    inputs' Variables (tree mode) or among the inputs' graph objects (graph mode without
    graph updates); outside, the caller's Variable of that index takes its place."""

    index: int


jax.tree_util.register_static(_CarriedVariable)


def _mark_carried_variables(
    carry_in: tp.Any, out: tp.Any, out_axes: tp.Any, objs: list[tp.Any], same_length: bool
) -> tp.Any:
    """Tree mode: the carry's Variables returned as the carry become :class:`_CarriedVariable`.

    They are the inputs' own Variables: scan carries their state and gives back
    the caller's Variables in their place (see :func:`_restore_carried_variables`).
    """
    found = scan_carry.carry_out(out, out_axes, same_length)
    if found is None:
        return out
    positions = checks.check_carry_identity(carry_in, found.value)
    if not positions:
        return out
    index, carry_out = found
    obj_index = {id(obj): i for i, obj in enumerate(objs)}
    leaves, treedef = jax.tree_util.tree_flatten(carry_out, is_leaf=trees.is_variable)
    for position in positions:
        leaves[position] = _CarriedVariable(obj_index[id(leaves[position])])
    return _with_carry(out, index, jax.tree_util.tree_unflatten(treedef, leaves))


def _mark_carried_graph_variables(
    carry_in: tp.Any, out: tp.Any, out_axes: tp.Any, index_ref: dict[int, tp.Any]
) -> tp.Any:
    """Graph mode without graph updates: the carry's Variables returned in the carry become
    :class:`_CarriedVariable` (by graph index), so the nodes holding them come back new,
    holding the caller's Variables, as flax's do (one held twice included)."""
    found = scan_carry.carry_out(out, out_axes, same_length=True)
    if found is None or found.index is None:
        return out
    index_of = {id(obj): i for i, obj in index_ref.items()}
    own = {id(v) for v in jax.tree_util.tree_leaves(carry_in, is_leaf=trees.is_variable) if trees.is_variable(v)}

    def mark(x: tp.Any) -> tp.Any:
        return _CarriedVariable(index_of[id(x)]) if trees.is_variable(x) and id(x) in own else x

    carry_out = jax.tree_util.tree_map(mark, found.value, is_leaf=trees.is_variable)
    marked = jax.tree_util.tree_leaves(carry_out, is_leaf=lambda x: isinstance(x, _CarriedVariable))
    if not any(isinstance(x, _CarriedVariable) for x in marked):
        return out
    return _with_carry(out, found.index, carry_out)


def _with_carry(out: tp.Any, index: int, carry_out: tp.Any) -> tp.Any:
    """``out`` with its carry (the whole of it at index -1) replaced by ``carry_out``."""
    if index == -1:
        return carry_out
    return type(out)(carry_out if i == index else v for i, v in enumerate(out))


def _restore_carried_variables(out: tp.Any, originals: tp.Mapping[int, tp.Any]) -> tp.Any:
    return jax.tree_util.tree_map(
        lambda x: originals[x.index] if isinstance(x, _CarriedVariable) else x,
        out,
        is_leaf=lambda x: isinstance(x, _CarriedVariable),
    )


@dataclasses.dataclass(frozen=True)
class _ScanPlan:
    """Where each item of a scan's lifted inputs goes: into the carry, scanned along
    its axis, or closed over. Items are numbered through the Layout: the argument
    leaves, then the states."""

    values: list[tp.Any]
    prefixes: list[tp.Any]
    n_leaves: int
    objects: tuple[int, ...]  # the items holding the input objects, in the order of ``Result.in_part``
    carried: tuple[int, ...]
    scanned: tuple[int, ...]

    @classmethod
    def of(cls, lifted: lift.Lifted) -> _ScanPlan:
        values = [*lifted.pure.leaves, *lifted.pure.states]
        prefixes = [*lifted.prefix.leaves, *lifted.prefix.states]
        n_leaves = len(lifted.pure.leaves)
        objects = tuple(range(n_leaves, len(values))) if lifted.static.graph else lifted.static.obj_slots
        # broadcast (None) object state is carried, except with graph updates, where
        # every step sees it as it was and its updates are dropped
        carried_broadcast = set() if lifted.static.graph_updates else set(objects)
        carried = tuple(i for i, p in enumerate(prefixes) if p is Carry or (p is None and i in carried_broadcast))
        scanned = tuple(i for i, p in enumerate(prefixes) if is_scanned(p))
        return cls(values, prefixes, n_leaves, objects, carried, scanned)

    def carry_init(self) -> list[tp.Any]:
        return [self.values[i] for i in self.carried]

    def xs(self) -> list[tp.Any]:
        """The scanned items, their axis moved to the front."""
        return [_move(self.values[i], self.prefixes[i], 0) for i in self.scanned]

    def pure(self, carry: list[tp.Any], x: list[tp.Any]) -> trees.Layout:
        """The lifted inputs of one step: the closed-over items with this step's carry and slice."""
        current = list(self.values)
        for i, v in zip(self.carried, carry):
            current[i] = v
        for i, v in zip(self.scanned, x):
            current[i] = v
        return trees.Layout(current[: self.n_leaves], current[self.n_leaves :])


@dataclasses.dataclass(frozen=True)
class _TraceInfo:
    """What tracing the body found out about its output, for the reassembly after the
    scan (a pytree without leaves: a jitted scan returns it, and JAX caches it with the trace)."""

    static: lift.OutStatic
    out_treedef: jax.tree_util.PyTreeDef
    out_prefixes: tuple[tp.Any, ...]
    restore: bool  # the carry returned the carry's own Variables (tree mode, or graph mode without updates)


jax.tree_util.register_static(_TraceInfo)


@dataclasses.dataclass
class _Traced:
    """Filled while the body is traced; :meth:`info` is what it found."""

    static: lift.OutStatic = dataclasses.field(default_factory=lift.OutStatic)
    out_treedef: jax.tree_util.PyTreeDef | None = None
    out_prefixes: list[tp.Any] = dataclasses.field(default_factory=list)
    restore: bool = False

    def info(self) -> _TraceInfo:
        assert self.out_treedef is not None, "the scan body was traced"
        return _TraceInfo(self.static, self.out_treedef, tuple(self.out_prefixes), self.restore)


class _Ys(tp.NamedTuple):
    """What the body stacks: the user's scanned outputs and the scanned inputs' new states,
    keyed as flax's are (see :mod:`.output_places`)."""

    places: output_places.Places
    outputs: output_places.Leaves
    states: list[tp.Any]


output_places.register(_Ys, lambda ys: (GetAttrKey("places"), ys.places.output, ys.places.updates))

_ScanBody = tp.Callable[[list[tp.Any], list[tp.Any]], tuple[list[tp.Any], _Ys]]


def _scan_body(
    fun: tp.Callable[..., tp.Any],
    static: lift.InStatic,
    plan: _ScanPlan,
    carry_arg: int | None,
    out_axes: tp.Any,
    metadata: tp.Mapping[str, tp.Any],
    traced: _Traced,
) -> _ScanBody:
    """The function ``jax.lax.scan`` runs: ``(carry, x) -> (carry, ys)``;
    ``metadata`` names the scanned axis in the out_sharding of the Variables it slices or stacks."""
    jax_out = trees.out_prefix_for_jax(out_axes, expand_axes)
    tree_carry = carry_arg if not static.graph else None
    is_object = set(plan.objects)

    def body(carry: list[tp.Any], x: list[tp.Any]) -> tuple[list[tp.Any], _Ys]:
        entered = lift.enter(static, plan.pure(carry, x))
        in_objects = list(zip(entered.objects, static.obj_prefixes))
        axis_metadata(metadata, in_objects, add=False)
        given = None if carry_arg is None else entered.args[carry_arg]
        checks_prefix = carry_arg is not None and not static.graph_updates
        snapshot = scan_carry.carry_snapshot(given) if checks_prefix else None
        out = fun(*entered.args)
        if static.graph_updates:
            scan_axes.check_fit(out_axes, out, "out[1]", output=True)
        if checks_prefix:
            scan_carry.check_carry_prefix(snapshot, out, out_axes, same_length=static.asked_graph)
        elif carry_arg is not None:
            scan_carry.check_same_references(given, out, out_axes)
        if metadata:
            axis_metadata(metadata, in_objects + out_objects(out, out_axes), add=True)
        if tree_carry is not None:
            marked = _mark_carried_variables(snapshot, out, out_axes, entered.objects, same_length=static.asked_graph)
            traced.restore = marked is not out
            out = marked
        elif checks_prefix:
            marked = _mark_carried_graph_variables(entered.args[carry_arg], out, out_axes, entered.index_ref)
            traced.restore = marked is not out
            out = marked
        result = lift.exit("scan", static, entered, out, out_axes, expand_axes, carry_arg=tree_carry)
        out_paths, traced.out_treedef = jax.tree_util.tree_flatten_with_path(result.out_tree)
        out_leaves = [leaf for _, leaf in out_paths]
        traced.out_prefixes = trees.broadcast_prefix(jax_out, result.out_tree, lambda _: False)
        traced.static = result.static
        in_group_out = dict(zip(plan.objects, result.in_part))
        user_carry = [v for v, p in zip(out_leaves, traced.out_prefixes) if p is Carry]
        scanned_out = [(path, v) for (path, v), p in zip(out_paths, traced.out_prefixes) if is_scanned(p)]
        user_ys = output_places.Leaves([v for _, v in scanned_out], tuple(path for path, _ in scanned_out))
        state_ys = [in_group_out[i] for i in plan.scanned if i in is_object]
        user_iter = iter(user_carry)
        try:
            new_carry = [in_group_out[i] if i in is_object else next(user_iter) for i in plan.carried]
        except StopIteration:
            new_carry = None
        if new_carry is None or next(user_iter, None) is not None:
            raise ValueError(
                "nnx.scan: the carry returned by the function does not match the carry it "
                f"received: expected {sum(i not in is_object for i in plan.carried)} arrays, "
                f"got {len(user_carry)}"
            )
        for i, given_state, new in zip(plan.carried, carry, new_carry):
            if i in is_object:
                scan_carry.check_carried_state(given_state, new)
        carry_out = _restructure(jax.tree.leaves(new_carry), [jax.tree.structure(c) for c in carry])
        return carry_out, _Ys(result.static.places, user_ys, state_ys)

    return trees.reported_as(fun, body)


def _reassemble(
    plan: _ScanPlan, traced: _TraceInfo, final_carry: list[tp.Any], user_ys: list[tp.Any], state_ys: list[tp.Any]
) -> lift.Result:
    """The scan's outputs as one call's :class:`lift.Result`: the final carry and the
    stacked slices put back where the plan took them from, scanned axes moved back."""
    carry_by_index = dict(zip(plan.carried, final_carry))
    scanned = set(plan.scanned)
    state_ys_iter = iter(state_ys)
    in_part = []
    for i in plan.objects:
        if i in carry_by_index:
            in_part.append(carry_by_index[i])
        else:
            in_part.append(_move(next(state_ys_iter), 0, plan.prefixes[i]) if i in scanned else plan.values[i])
    is_object = set(plan.objects)
    carry_iter = iter([carry_by_index[i] for i in plan.carried if i not in is_object])
    ys_iter = iter(user_ys)
    out_leaves = [next(carry_iter) if p is Carry else _move(next(ys_iter), 0, p) for p in traced.out_prefixes]
    return lift.Result(traced.static, in_part, jax.tree_util.tree_unflatten(traced.out_treedef, out_leaves))


class _LoopOptions(tp.NamedTuple):
    """The options of ``jax.lax.scan`` that a scan passes on."""

    length: int | None
    reverse: bool
    unroll: int | bool
    split_transpose: bool


class _Scanned(tp.NamedTuple):
    """What one scan returns: the final carry, the stacked outputs, and what tracing found."""

    final_carry: list[tp.Any]
    user_ys: list[tp.Any]
    state_ys: list[tp.Any]
    info: _TraceInfo


def _is_dynamic(value: tp.Any) -> bool:
    """Whether a closed-over item travels as an argument of the jitted scan: all its leaves are arrays."""
    leaves = jax.tree_util.tree_leaves(value)
    return all(isinstance(leaf, (jax.Array, np.ndarray)) for leaf in leaves)


def _scan_function(
    fun: tp.Callable[..., tp.Any],
    static: lift.InStatic,
    plan: _ScanPlan,
    carry_arg: int | None,
    out_axes: tp.Any,
    metadata: tp.Mapping[str, tp.Any],
    options: _LoopOptions,
) -> tuple[tp.Callable[[list[tp.Any]], _Scanned], list[tp.Any]]:
    """The function running the scan, and its arguments (the plan's dynamic items).

    It is jitted and kept per user function and structure (see :mod:`traced`), so the
    body is traced once per structure; where the structure cannot key a cache (an
    unhashable static item, a graph object among the static items, a Ref) or where a
    carried or scanned item is no array (a Python scalar) it is built afresh and runs unjitted.
    """
    carried_or_scanned = {*plan.carried, *plan.scanned}
    dynamic = tuple(i for i, v in enumerate(plan.values) if i in carried_or_scanned or _is_dynamic(v))
    skeleton = [None if i in dynamic else v for i, v in enumerate(plan.values)]

    def build(call: tp.Callable[..., tp.Any]) -> tp.Callable[[list[tp.Any]], _Scanned]:
        def run(items: list[tp.Any]) -> _Scanned:
            values = list(skeleton)
            for i, v in zip(dynamic, items):
                values[i] = v
            step_plan = dataclasses.replace(plan, values=values)
            traced = _Traced()
            body = _scan_body(call, static, step_plan, carry_arg, out_axes, metadata, traced)
            final_carry, ys = jax.lax.scan(
                body,
                step_plan.carry_init(),
                step_plan.xs(),
                length=options.length,
                reverse=options.reverse,
                unroll=options.unroll,
                _split_transpose=options.split_transpose,
            )
            return _Scanned(final_carry, ys.outputs.values, ys.states, traced.info())

        return run

    items = [plan.values[i] for i in dynamic]
    out_leaves, out_treedef = jax.tree_util.tree_flatten(out_axes)
    key = (
        static,
        tuple(plan.prefixes),
        plan.n_leaves,
        plan.objects,
        dynamic,
        tuple(skeleton),
        carry_arg,
        tuple(out_leaves),
        out_treedef,
        tuple(metadata.items()),
        options,
    )
    try:
        hash(key)
    except TypeError:
        return build(fun), items
    if not all(map(_is_dynamic, items)):
        return build(fun), items  # jax.jit would turn a Python scalar passing through into an array
    held = jax.tree_util.tree_leaves(skeleton, is_leaf=trees.is_object)
    if any(map(trees.is_object, held)) or any(map(reprlib.is_ref, jax.tree_util.tree_leaves(plan.values))):
        return build(fun), items  # a cache would hold the objects, or JAX would get Refs
    return pure_function(fun, key, lambda call: jax.jit(build(call))), items


def _run_scan(
    fun: tp.Callable[..., tp.Any],
    lifted: lift.Lifted,
    carry_arg: int | None,
    out_axes: tp.Any,
    metadata: tp.Mapping[str, tp.Any],
    options: _LoopOptions,
) -> tp.Any:
    """Runs ``jax.lax.scan`` over the lifted inputs: plan, build the body, scan, reassemble, apply."""
    plan = _ScanPlan.of(lifted)
    run, items = _scan_function(fun, lifted.static, plan, carry_arg, out_axes, metadata, options)
    final_carry, user_ys, state_ys, info = run(items)
    out = lift.apply(lifted, _reassemble(plan, info, final_carry, user_ys, state_ys))
    if info.restore:
        out = _restore_carried_variables(out, lift.caller_objects(lifted))
    return out


def _restructure(flat: list[tp.Any], structures: list[jax.tree_util.PyTreeDef]) -> list[tp.Any]:
    """Regroup a flat list of arrays into trees of the given structures."""
    out, start = [], 0
    for treedef in structures:
        n = treedef.num_leaves
        out.append(jax.tree_util.tree_unflatten(treedef, flat[start : start + n]))
        start += n
    return out
