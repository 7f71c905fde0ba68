"""Mapping and looping transforms: ``vmap``, ``pmap`` and the loops; the axis prefixes
(``Carry``, ``StateAxes``) they and :mod:`scanning` share."""

from __future__ import annotations

import functools
import typing as tp

import jax

from .. import graphlib
from .._sharding import PARTITION_NAME
from ..graphlib import Mode, without_metadata
from ..variablelib import Variable
from . import _checks as checks
from . import _lift as lift
from . import _traced as traced
from . import _trees as trees
from ._metadata_axes import axis_metadata
from ._prefix import PrefixMapping
from ._trees import is_node_leaf, is_variable

__all__ = [
    "Carry",
    "StateAxes",
    "fori_loop",
    "pmap",
    "transform_metadata",
    "vmap",
    "while_loop",
]


class Carry:
    """Marks an input/output of :func:`scan` (in ``in_axes``/``out_axes``) as the carry."""


class StateAxes(PrefixMapping, tp.Mapping[tp.Any, tp.Any]):
    """Maps substates of a graph node (selected by filters) to axes (int, None or Carry).

    A read-only Mapping from filters to axes, as flax's: a key that is not one of its
    filters raises ValueError (so ``in`` and ``get`` do for such a key too)."""

    def __init__(self, filter_axes: tp.Any, /):
        super().__init__(filter_axes)

    def _missing(self, path: tuple, variable: tp.Any) -> Exception:
        return ValueError(f"No axis found for {path=}, {variable=}")

    @property
    def axes(self) -> tuple:
        return self._values

    def __getitem__(self, key: tp.Any) -> tp.Any:
        return self._values[self._filters.index(key)]

    def __iter__(self) -> tp.Iterator[tp.Any]:
        return iter(self._filters)

    def __len__(self) -> int:
        return len(self._filters)

    def items(self) -> tp.Iterator[tuple[tp.Any, tp.Any]]:  # type: ignore[override]
        """Each (filter, axis) pair in order, a repeated filter included (as flax's)."""
        return zip(self._filters, self._values)

    __eq__ = PrefixMapping.__eq__
    __hash__ = PrefixMapping.__hash__


def expand_axes(prefix: tp.Any, obj: tp.Any = None) -> list[tuple[trees.Filter, tp.Any]]:
    """The slices of a graph node that an axis prefix entry gives (one per StateAxes filter)."""
    if isinstance(prefix, StateAxes):
        return prefix.groups()
    return trees.whole(prefix)


def per_arg(axes: tp.Any, args: tuple, name: str, graph: bool) -> tuple:
    """``in_axes`` as a tuple with one entry per argument (an int/None applies to all);
    a tuple of another length, a list, or (vmap, pmap) a StateAxes not in a tuple raises,
    as flax's transform ``name`` does in that mode."""
    if type(axes) is list:
        raise ValueError(
            "pytree structure error: different types at key path\n    in_axes\nAt that key path, the "
            "prefix pytree in_axes has a subtree of type\n    <class 'list'>\nbut at the same key path "
            "the full pytree has a subtree of different type\n    <class 'tuple'>."
        )
    if isinstance(axes, StateAxes) and name in ("vmap", "pmap"):
        # flax hands it to JAX as the whole in_axes, which JAX refuses (vmap by type)
        raise (TypeError if name == "vmap" else ValueError)(
            f"{name} in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {axes!r}."
        )
    if type(axes) is tuple:
        if len(axes) != len(args):
            if not graph and name in ("vmap", "pmap"):
                raise ValueError(
                    f"{name} in_axes must be an int, None, or a tuple of entries corresponding to the "
                    f"positional arguments passed to the function, but got len(in_axes)={len(axes)}, "
                    f"len(args)={len(args)}."
                )
            raise ValueError(
                "pytree structure error: different lengths of tuple at key path\n    in_axes\n"
                f"At that key path, the prefix pytree in_axes has a subtree of type tuple of length "
                f"{len(axes)}, but the full pytree has a subtree of the same type but of length {len(args)}."
            )
        return tuple(axes)
    return tuple(axes for _ in args)


def out_objects(out: tp.Any, out_axes: tp.Any) -> list[tuple[tp.Any, tp.Any]]:
    """The graph objects of ``out`` (arguments or results), each with its entry of ``out_axes``."""
    leaves = jax.tree_util.tree_leaves(out, is_leaf=trees.is_node_leaf)
    prefixes = trees.broadcast_prefix(out_axes, out, trees.is_node_leaf)
    return [(leaf, p) for leaf, p in zip(leaves, prefixes) if trees.is_object(leaf)]


def reject_state_axes(
    name: str, in_axes: tp.Any, out_axes: tp.Any, graph: bool | None, graph_updates: bool | None
) -> None:
    """Raises unless StateAxes in the axes come with graph mode and graph updates."""
    mode = trees.resolve_mode(graph, graph_updates)
    checks.reject_prefix_objects(name, in_axes, StateAxes, mode, "in_axes")
    checks.reject_prefix_objects(name, out_axes, StateAxes, mode, "out_axes")


def _mapped(
    name: str,
    fun: tp.Callable,
    jax_map: tp.Callable,
    in_axes: tp.Any,
    out_axes: tp.Any,
    metadata: tp.Mapping[str, tp.Any],
    graph: bool | None,
    graph_updates: bool | None,
) -> tp.Callable:
    """The shared body of vmap and pmap: lift, map the pure function, apply."""
    trees.reject_bound_method(name, fun)
    reject_state_axes(name, in_axes, out_axes, graph, graph_updates)

    @functools.wraps(fun)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        mode = trees.resolve_mode(graph, graph_updates)
        if mode.graph_updates:
            args, kwargs = trees.positional(fun, args, kwargs, "with defaults"), {}
        reject_state_axes(name, in_axes, out_axes, graph, graph_updates)
        # keyword arguments left are mapped along axis 0, as jax.vmap and jax.pmap map them
        prefix = (per_arg(in_axes, args, name, mode.graph), dict.fromkeys(kwargs, 0))
        lifted = lift.lift(name, (args, kwargs), prefix, mode, expand=expand_axes)
        moved = metadata if mode.graph_updates else {}  # as flax's, only graph updates move metadata

        def pure_fn(pure: tp.Any) -> tp.Any:
            entered = lift.enter(lifted.static, pure)
            in_objects = list(zip(entered.objects, lifted.static.obj_prefixes))
            axis_metadata(moved, in_objects, add=False)
            inner_args, inner_kwargs = entered.args
            out = fun(*inner_args, **inner_kwargs)
            axis_metadata(moved, in_objects + out_objects(out, out_axes), add=True)
            return lift.exit(name, lifted.static, entered, out, out_axes, expand_axes)

        jax_out = lift.Result(None, lifted.in_prefix(), trees.out_prefix_for_jax(out_axes, expand_axes))
        result = jax_map(pure_fn, in_axes=(lifted.prefix,), out_axes=jax_out)(lifted.pure)
        return lift.apply(lifted, result)

    return wrapper


class VmapOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`vmap`."""

    in_axes: tp.Any
    out_axes: tp.Any
    axis_name: tp.Hashable | None
    axis_size: int | None
    spmd_axis_name: tp.Any
    transform_metadata: tp.Mapping[str, tp.Any]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def vmap(f: trees.Fn, /, **options: tp.Unpack[VmapOptions]) -> trees.Fn: ...
@tp.overload
def vmap(**options: tp.Unpack[VmapOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def vmap(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    in_axes: tp.Any = 0,
    out_axes: tp.Any = 0,
    axis_name: tp.Hashable | None = None,
    axis_size: int | None = None,
    spmd_axis_name: tp.Any = None,
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # read only
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.vmap``: ``in_axes``/``out_axes`` may hold ``StateAxes`` for graph nodes."""
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's

    def jax_map(fn: tp.Callable, *, in_axes: tp.Any, out_axes: tp.Any) -> tp.Callable:
        return jax.vmap(
            fn,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
        )

    return trees.decorator_or_call(
        f, lambda fun: _mapped("vmap", fun, jax_map, in_axes, out_axes, transform_metadata, graph, graph_updates)
    )


class PmapOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`pmap`."""

    axis_name: tp.Hashable | None
    in_axes: tp.Any
    out_axes: tp.Any
    static_broadcasted_argnums: int | tp.Iterable[int]
    devices: tp.Sequence[tp.Any] | None
    backend: str | None
    axis_size: int | None
    donate_argnums: int | tp.Iterable[int]
    transform_metadata: tp.Mapping[str, tp.Any]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def pmap(f: trees.Fn, /, **options: tp.Unpack[PmapOptions]) -> trees.Fn: ...
@tp.overload
def pmap(**options: tp.Unpack[PmapOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def pmap(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    axis_name: tp.Hashable | None = None,
    in_axes: tp.Any = 0,
    out_axes: tp.Any = 0,
    static_broadcasted_argnums: int | tp.Iterable[int] = (),
    devices: tp.Sequence[tp.Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | tp.Iterable[int] = (),
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # read only
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.pmap``: like :func:`vmap`, over devices.

    ``static_broadcasted_argnums`` and ``donate_argnums`` are accepted for
    signature compatibility and not applied.
    """
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's

    def jax_map(fn: tp.Callable, *, in_axes: tp.Any, out_axes: tp.Any) -> tp.Callable:
        return jax.pmap(
            fn,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
        )

    return trees.decorator_or_call(
        f, lambda fun: _mapped("pmap", fun, jax_map, in_axes, out_axes, transform_metadata, graph, graph_updates)
    )


def transform_metadata(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    in_axes: tp.Any = 0,
    out_axes: tp.Any = 0,
    partition: str | None,
    graph: bool | None = None,
) -> tp.Any:
    """Moves the partition name of a mapped axis in Variable metadata, for code that maps by hand.

    As flax does, the function runs on a copy of its inputs (keyword arguments moved to
    their positions), whose Variables' ``out_sharding`` lacks ``partition`` at their
    ``in_axes`` axis; after it, the copy gets the name back there once per path
    ``jax.tree`` takes to a Variable, the output's Variables get it at ``out_axes``, and
    each input Variable whose copy changed takes the copy's value and metadata (other
    changes to the copy are not kept; a copy the function detached does not get the name
    back). ``ValueError`` when that axis holds another name, when the output holds a
    Variable the function was given, in graph mode when the inputs give one Variable two
    axes, in tree mode when the inputs or the output hold one Variable twice; after an
    error the inputs are as they were.
    """
    metadata = {PARTITION_NAME: partition}

    def make(fun: tp.Callable) -> tp.Callable:
        @functools.wraps(fun)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            args = trees.positional(fun, args, kwargs, "with defaults")
            in_graph = graphlib.resolve_mode(graph, None).graph
            axes = per_arg(in_axes, args, "transform_metadata", True)
            if in_graph:
                checks.check_consistent_aliasing(_reached_by_argument(args, axes))
            else:
                checks.check_no_sharing("transform_metadata", (args, {}))
            copies = graphlib.clone(args, graph=True)
            in_objects = out_objects(copies, axes)
            axis_metadata(metadata, in_objects, add=False)
            entered = [  # as the function gets them, the axis taken out: what the write-back compares with
                _Copied(original, copy, *_variable_state(copy)) for original, copy in _variable_pairs(args, copies)
            ]
            given = checks.input_variables((copies, {}), graph_paths=in_graph)  # those the function may replace
            out = fun(*copies)
            checks.check_outputs_are_not(
                "transform_metadata", given, out, shared_outputs=in_graph, graph_paths=in_graph
            )
            axis_metadata(metadata, in_objects, add=True, every_path=True)
            axis_metadata(metadata, out_objects(out, out_axes), add=True)
            for copied in entered:
                copied.write_back()
            return out

        return wrapper

    return trees.decorator_or_call(f, make)


def _reached_by_argument(args: tuple, axes: tuple) -> tp.Iterator[list[checks.Reached]]:
    """What each argument reaches, labelled by its position and the path below it."""
    for position, (arg, prefix) in enumerate(zip(args, axes)):
        yield [
            entry
            for obj, obj_prefix in out_objects(arg, prefix)
            for entry in checks.reached(obj, obj_prefix, root=(position,))
        ]


def _variable_pairs(originals: tp.Any, copies: tp.Any) -> list[tuple[Variable, Variable]]:
    """The Variables of ``originals`` with their counterparts in ``copies`` (same structure)."""
    walks = zip(graphlib.iter_graph(originals, graph=True), graphlib.iter_graph(copies, graph=True))
    return [(original, copy) for (_, original), (_, copy) in walks if isinstance(original, Variable)]


def _variable_state(variable: Variable) -> tuple[tp.Any, dict[str, tp.Any]]:
    """A Variable's raw value and metadata."""
    return variable.get_raw_value(), variable.get_metadata()


class _Copied(tp.NamedTuple):
    """An input Variable, its copy, and the copy's value and metadata as the function got them."""

    original: Variable
    copy: Variable
    value: tp.Any
    metadata: dict[str, tp.Any]

    def write_back(self) -> None:
        """If the copy changed (an entry set to an equal value does not count, as in flax), gives
        the original the copy's value, and its metadata where that differs from the original's."""
        value, metadata = _variable_state(self.copy)
        if value is self.value and metadata == self.metadata:
            return
        self.original.set_raw_value(value)
        if metadata != self.original.get_metadata():
            self.original.set_metadata(metadata)


# --------------------------------------------------------------------------- loops


def _loop_body(
    name: str,
    static: lift.InStatic,
    step: tp.Callable[[tp.Any], tp.Any],
    keeps_variables: bool,
    lowering: str,
    user: tp.Callable,
) -> tp.Callable:
    """Wrap ``step`` (value -> value) as a pure carry function checking the structure
    (``user``: the user's body, as JAX's errors name it);
    ``keeps_variables``: the body must also return the very Variables it was given, and
    keep the graph structure of the value (graph nodes, attributes, static values).
    ``lowering``: the ``jax.lax`` loop that runs it, whose ``TypeError`` a changed dtype or
    a changed state layout raises (a changed graph without graph updates: nnx's ``ValueError``)."""

    def body(pure: tp.Any) -> tp.Any:
        value = lift.enter(static, pure).args
        variables = _variables(value) if keeps_variables else None
        graphdef = graphlib.graphdef(value, graph=True) if keeps_variables and not static.graph_updates else None
        metadata = _metadata_by_path(value) if graphdef is not None and not static.asked_graph else None
        new_value = step(value)
        if trees.holds_no_jax_type(new_value):  # JAX refuses it, naming the body and the place, as flax's loops do
            plain = jax.tree.map(lambda x: None if is_node_leaf(x) else x, new_value, is_leaf=is_node_leaf)
            if name == "fori_loop" and static.graph_updates:  # flax's traces this body for jit first
                jax.jit(trees.reported_as(user, lambda: plain))()
            return plain
        if graphdef is not None:
            _check_same_graph(name, lowering, graphdef, metadata, new_value)
        if variables is not None and _variables(new_value) != variables:
            if static.graph_updates:
                raise ValueError(_STRUCTURE_CHANGED.format(name=name))
            raise ValueError(f"{name} Variable identity must be preserved across iterations.")
        mode = Mode(static.asked_graph, static.graph_updates)
        relifted = lift.lift(name, new_value, None, mode, coalesce=True, roots=(".init_val",))
        if not _same_structure(relifted, static, pure):
            # JAX's loop finds a change of the state layout alone, and with graph updates
            # fori_loop's finds any change (while_loop's graph changes are nnx's ValueError)
            if relifted.static == static or (static.graph_updates and name == "fori_loop"):
                raise TypeError(f"{lowering} {_CARRY_CHANGED}")
            raise ValueError(_STRUCTURE_CHANGED.format(name=name))
        if not _same_dtypes(relifted.pure, pure):
            raise TypeError(
                f"{lowering} body function carry input and carry output must have equal types, but they "
                "differ: the body changed the dtype of a value of the loop"
            )
        return relifted.pure

    return body


def _check_same_graph(
    name: str,
    lowering: str,
    graphdef: graphlib.GraphDef[tp.Any],
    metadata: dict[str, dict[str, tp.Any]] | None,
    new_value: tp.Any,
) -> None:
    """A body run without graph updates keeps the graph of its value: a change of its nodes,
    attributes, Variable types or static values is nnx's ``ValueError``; in tree mode
    (``metadata``: each Variable's before the body), where a Variable's metadata is part of
    the carry's pytree structure, a change of that alone is the ``TypeError`` of JAX's loop."""
    new_graphdef = graphlib.graphdef(new_value, graph=True)
    if new_graphdef == graphdef:
        return
    if metadata is None or without_metadata(new_graphdef.root) != without_metadata(graphdef.root):
        raise ValueError(_GRAPH_CHANGED.format(name=name))
    changed = next(path for path, entries in _metadata_by_path(new_value).items() if entries != metadata.get(path))
    raise TypeError(
        f"{lowering} {_CARRY_CHANGED}: the body changed the metadata of the Variable at loop value{changed}"
    )


def _metadata_by_path(value: tp.Any) -> dict[str, dict[str, tp.Any]]:
    """The metadata of each Variable of a tree-mode loop value, by its ``jax.tree`` key path."""
    leaves = jax.tree_util.tree_flatten_with_path(value, is_leaf=is_variable)[0]
    return {jax.tree_util.keystr(path): leaf.get_metadata() for path, leaf in leaves if is_variable(leaf)}


_CARRY_CHANGED = "body function carry input and carry output must have the same pytree structure, but they differ"

_STRUCTURE_CHANGED = (
    "nnx.{name} requires body function's input and output to have the same reference and "
    "pytree structure, but they differ: the body changed the containers, graph nodes or "
    "Variables of the loop value"
)


_GRAPH_CHANGED = (
    "pytree structure error: the body of nnx.{name} returned a loop value whose graph "
    "structure (graph nodes, attributes, Variable types) differs from the one it was given"
)


def _variables(value: tp.Any) -> list[int]:
    """The identities of the Variables in ``value``, in graph order."""
    return [id(v) for _, v in graphlib.iter_graph(value, graph=True) if isinstance(v, Variable)]


def _same_structure(new: lift.Lifted, old: lift.InStatic, old_pure: tp.Any) -> bool:
    """The body kept the carry's structure: same containers, graph (Variable types
    included) and state layout."""
    return new.static == old and jax.tree.structure(new.pure) == jax.tree.structure(old_pure)


def _same_dtypes(new: tp.Any, old: tp.Any) -> bool:
    """Whether each value of the loop kept its dtype (a change of weak type alone JAX allows)."""
    return all(
        not hasattr(o, "dtype") or getattr(n, "dtype", None) == o.dtype
        for n, o in zip(jax.tree.leaves(new), jax.tree.leaves(old))
    )


def while_loop(
    cond_fun: tp.Callable[[tp.Any], tp.Any],
    body_fun: tp.Callable[[tp.Any], tp.Any],
    init_val: tp.Any,
    *,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.lax.while_loop``: ``init_val`` may contain graph nodes."""
    mode = trees.resolve_mode(graph, graph_updates)
    lifted = lift.lift("while_loop", init_val, None, mode, coalesce=True, roots=(".init_val",), tree_sharing=True)

    static = lifted.static

    def build_cond(call: tp.Callable) -> tp.Callable:
        return lambda pure: call(lift.enter(static, pure).args)

    cond = traced.pure_function(cond_fun, ("while_loop cond", static), build_cond)
    body = traced.pure_function(
        body_fun,
        ("while_loop body", static, mode.graph),
        lambda call: trees.reported_as(body_fun, _loop_body("while_loop", static, call, True, "while_loop", call)),
    )
    result = jax.lax.while_loop(cond, body, lifted.pure)
    return lift.apply_same(lifted, result)


def fori_loop(
    lower: int,
    upper: int,
    body_fun: tp.Callable[[int, tp.Any], tp.Any],
    init_val: tp.Any,
    *,
    unroll: int | bool | None = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.lax.fori_loop``: ``init_val`` may contain graph nodes."""
    mode = trees.resolve_mode(graph, graph_updates)
    lifted = lift.lift("fori_loop", init_val, None, mode, coalesce=True, roots=(".init_val",), tree_sharing=True)

    static = lifted.static

    lowering = _fori_lowering(lower, upper)

    def build(call: tp.Callable) -> tp.Callable:
        def body(i: tp.Any, pure: tp.Any) -> tp.Any:
            step = _loop_body(
                "fori_loop", static, lambda value: call(i, value), not static.graph_updates, lowering, call
            )
            return step(pure)

        return trees.reported_as(body_fun, body)

    body = traced.pure_function(body_fun, ("fori_loop", static, mode.graph, lowering), build)
    result = jax.lax.fori_loop(lower, upper, body, lifted.pure, unroll=unroll)
    return lift.apply_same(lifted, result)


def _fori_lowering(lower: tp.Any, upper: tp.Any) -> str:
    """The loop ``jax.lax.fori_loop`` runs: a scan between concrete bounds, else a while loop."""
    try:
        int(lower), int(upper)
    except (TypeError, jax.errors.ConcretizationTypeError):
        return "while_loop"
    return "scan"
