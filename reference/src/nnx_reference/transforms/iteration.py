"""Mapping and looping transforms: ``vmap``, ``pmap``, ``scan`` and the loops."""

from __future__ import annotations

import functools
import typing as tp

import jax
import jax.numpy as jnp

from .._sharding import PARTITION_NAME
from . import checks, lift, trees
from .prefix import PrefixMapping

__all__ = [
    "Carry",
    "StateAxes",
    "fori_loop",
    "pmap",
    "scan",
    "transform_metadata",
    "vmap",
    "while_loop",
]


class Carry:
    """Marks an input/output of :func:`scan` (in ``in_axes``/``out_axes``) as the carry."""


class StateAxes(PrefixMapping):
    """Maps substates of a graph node (selected by filters) to axes (int, None or Carry)."""

    def __init__(self, filter_axes: tp.Any, /):
        super().__init__(filter_axes)

    def _missing(self, path: tuple, variable: tp.Any) -> Exception:
        return ValueError(f"No axis found for {path=}, {variable=}")

    @property
    def axes(self) -> tuple:
        return self._values

    def keys(self) -> tuple:
        return self._filters

    def values(self) -> tuple:
        return self._values

    def items(self) -> list:
        return list(zip(self._filters, self._values))

    def get(self, key: tp.Any, default: tp.Any = None) -> tp.Any:
        return dict(self.items()).get(key, default)


def _expand_axes(prefix: tp.Any, obj: tp.Any = None) -> list:
    if isinstance(prefix, StateAxes):
        return prefix.groups()
    return trees.whole(prefix)


def _per_arg(axes: tp.Any, args: tuple) -> tuple:
    """``in_axes`` as a tuple with one entry per argument (an int/None applies to all)."""
    if type(axes) in (tuple, list):
        if len(axes) != len(args):
            raise ValueError(
                f"in_axes specification must be a tree prefix of the corresponding value, got "
                f"in_axes of length {len(axes)} for {len(args)} positional arguments"
            )
        return tuple(axes)
    return tuple(axes for _ in args)


def _axis_metadata(
    metadata: tp.Mapping[str, tp.Any], objects: tp.Iterable[tuple[tp.Any, tp.Any]], add: bool
) -> None:
    """Add (leaving a mapped call) or remove (entering it) the mapped axis in Variable metadata.

    Only when ``metadata`` names a ``PARTITION_NAME``; ``objects`` are ``(object, prefix)``.
    """
    if PARTITION_NAME not in metadata:
        return
    name = metadata[PARTITION_NAME]
    done: set[int] = set()
    for obj, prefix in objects:
        for _, var, axis in checks.variable_prefixes(obj, prefix):
            if id(var) in done or not _is_scanned(axis):
                continue
            done.add(id(var))
            (var.add_axis if add else var.remove_axis)(axis, name)


def _out_objects(out: tp.Any, out_axes: tp.Any) -> list[tuple[tp.Any, tp.Any]]:
    leaves = jax.tree_util.tree_leaves(out, is_leaf=trees.is_node_leaf)
    prefixes = trees.broadcast_prefix(out_axes, out, trees.is_node_leaf)
    return [(leaf, p) for leaf, p in zip(leaves, prefixes) if trees.is_object(leaf)]


def _reject_state_axes(
    name: str, in_axes: tp.Any, out_axes: tp.Any, graph: bool | None, graph_updates: bool | None
) -> None:
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
    _reject_state_axes(name, in_axes, out_axes, graph, graph_updates)

    @functools.wraps(fun)
    def wrapper(*args: tp.Any) -> tp.Any:
        mode = trees.resolve_mode(graph, graph_updates)
        _reject_state_axes(name, in_axes, out_axes, graph, graph_updates)
        lifted = lift.Lifted(
            name, args, _per_arg(in_axes, args), graph=mode[0], graph_updates=mode[1],
            expand=_expand_axes,
        )

        def pure_fn(pure: tp.Any) -> tp.Any:
            inner_args, objs = lift.enter(lifted.static, pure)
            in_objects = list(zip(objs, lifted.static.obj_prefixes))
            _axis_metadata(metadata, in_objects, add=False)
            out = fun(*inner_args)
            _axis_metadata(metadata, in_objects + _out_objects(out, out_axes), add=True)
            return lift.exit(name, lifted.static, objs, out, out_axes, _expand_axes)

        jax_out = (None, lift.in_prefix(lifted), trees.out_prefix_for_jax(out_axes, _expand_axes))
        result = jax_map(pure_fn, in_axes=(lifted.prefix,), out_axes=jax_out)(lifted.pure)
        return lift.apply(lifted, result)

    return wrapper


def vmap(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    in_axes: tp.Any = 0,
    out_axes: tp.Any = 0,
    axis_name: tp.Hashable | None = None,
    axis_size: int | None = None,
    spmd_axis_name: tp.Any = None,
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # noqa: B006 (read only)
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.vmap``: ``in_axes``/``out_axes`` may hold ``StateAxes`` for graph nodes."""

    def jax_map(fn: tp.Callable, *, in_axes: tp.Any, out_axes: tp.Any) -> tp.Callable:
        return jax.vmap(
            fn, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
            axis_size=axis_size, spmd_axis_name=spmd_axis_name,
        )

    return trees.decorator_or_call(
        f, lambda fun: _mapped(
            "vmap", fun, jax_map, in_axes, out_axes, transform_metadata, graph, graph_updates
        )
    )


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
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # noqa: B006 (read only)
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.pmap``: like :func:`vmap`, over devices.

    ``static_broadcasted_argnums`` and ``donate_argnums`` are accepted for
    signature compatibility and not applied.
    """

    def jax_map(fn: tp.Callable, *, in_axes: tp.Any, out_axes: tp.Any) -> tp.Callable:
        return jax.pmap(
            fn, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
            devices=devices, backend=backend, axis_size=axis_size,
        )

    return trees.decorator_or_call(
        f, lambda fun: _mapped(
            "pmap", fun, jax_map, in_axes, out_axes, transform_metadata, graph, graph_updates
        )
    )


def transform_metadata(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    in_axes: tp.Any = 0,
    out_axes: tp.Any = 0,
    partition: str | None,
    graph: bool | None = None,
) -> tp.Any:
    """Declare, for code that maps by hand, the axis ``partition`` adds to Variable metadata.

    The wrapped function is called unchanged; the axes only describe metadata.
    """

    def make(fun: tp.Callable) -> tp.Callable:
        @functools.wraps(fun)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            return fun(*args, **kwargs)

        return wrapper

    return trees.decorator_or_call(f, make)


# --------------------------------------------------------------------------- scan


def _move(tree: tp.Any, source: int, destination: int) -> tp.Any:
    if source == destination:
        return tree
    return jax.tree.map(lambda x: jnp.moveaxis(x, source, destination), tree)


def scan(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
    in_axes: tp.Any = (Carry, 0),
    out_axes: tp.Any = (Carry, 0),
    transform_metadata: tp.Mapping[str, tp.Any] = {},  # noqa: B006 (read only)
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.lax.scan``: arguments marked ``Carry`` are carried, ints are scanned.

    Graph nodes scanned along an axis have their updated state stacked back on
    it; carried or broadcast (``None``) graph node state is carried.
    """

    _reject_state_axes("scan", in_axes, out_axes, graph, graph_updates)
    tree_paths = not trees.resolve_mode(graph, graph_updates)[0]
    _check_single_carry(in_axes, "in_axes", tree_paths)
    _check_single_carry(out_axes, "out_axes", tree_paths)

    def make(fun: tp.Callable) -> tp.Callable:
        @functools.wraps(fun)
        def wrapper(*args: tp.Any) -> tp.Any:
            mode = trees.resolve_mode(graph, graph_updates)
            _reject_state_axes("scan", in_axes, out_axes, graph, graph_updates)
            per_arg = _per_arg(in_axes, args)
            lifted = lift.Lifted(
                "scan", args, per_arg, graph=mode[0], graph_updates=mode[1],
                expand=_expand_axes,
            )
            carry_arg = next((i for i, p in enumerate(per_arg) if p is Carry), None)
            return _run_scan(
                fun, lifted, carry_arg, out_axes, length, reverse, unroll, _split_transpose
            )

        return wrapper

    return trees.decorator_or_call(f, make)


def _check_single_carry(axes: tp.Any, argname: str, tree_mode: bool) -> None:
    """At most one entry of ``in_axes``/``out_axes`` may be ``Carry``."""
    paths = [p for p, leaf in jax.tree_util.tree_flatten_with_path(axes)[0] if leaf is Carry]
    if len(paths) < 2:
        return
    if tree_mode:
        raise ValueError(f"Found multiple Carry definitions in {argname}")
    first, second = (argname + jax.tree_util.keystr(p) for p in paths[:2])
    raise ValueError(f"Found multiple Carry definitions at {first} and {second}")


def _is_scanned(prefix: tp.Any) -> bool:
    return isinstance(prefix, int) and not isinstance(prefix, bool)


def _out_carry_index(out: tp.Any, out_axes: tp.Any) -> int | None:
    """Where the output carry is: ``-1`` for the whole output, else its position."""
    if out_axes is Carry:
        return -1
    if type(out_axes) in (tuple, list) and type(out) in (tuple, list) and len(out) == len(out_axes):
        return next((i for i, p in enumerate(out_axes) if p is Carry), None)
    return None


def _mark_carried_variables(carry_in: tp.Any, out: tp.Any, out_axes: tp.Any, objs: list) -> tp.Any:
    """Tree mode: the carry's Variables returned as the carry become ``Static(object index)``.

    They are the inputs' own Variables: scan carries their state and gives back
    the caller's Variables in their place (see :func:`_restore_carried_variables`).
    """
    index = _out_carry_index(out, out_axes)
    if index is None:
        return out
    carry_out = out if index == -1 else out[index]
    positions = checks.check_carry_identity(carry_in, carry_out)
    if not positions:
        return out
    obj_index = {id(obj): i for i, obj in enumerate(objs)}
    leaves, treedef = jax.tree_util.tree_flatten(carry_out, is_leaf=trees.is_variable)
    for position in positions:
        leaves[position] = trees.Static(obj_index[id(leaves[position])])
    carry_out = jax.tree_util.tree_unflatten(treedef, leaves)
    if index == -1:
        return carry_out
    return type(out)(carry_out if i == index else v for i, v in enumerate(out))


def _restore_carried_variables(out: tp.Any, originals: list) -> tp.Any:
    return jax.tree_util.tree_map(
        lambda x: originals[x.value] if isinstance(x, trees.Static) else x,
        out,
        is_leaf=lambda x: isinstance(x, trees.Static),
    )


def _run_scan(
    fun: tp.Callable,
    lifted: lift.Lifted,
    carry_arg: int | None,
    out_axes: tp.Any,
    length: int | None,
    reverse: bool,
    unroll: int | bool,
    split_transpose: bool,
) -> tp.Any:
    leaves, states = lifted.pure
    leaf_prefix, group_prefix = lifted.prefix
    values = list(leaves) + list(states)
    prefixes = list(leaf_prefix) + list(group_prefix)
    n_leaves = len(leaves)
    if lifted.static.graph:
        in_index = list(range(n_leaves, len(values)))
    else:
        in_index = list(lifted.static.obj_slots)
    is_obj = set(in_index)
    carried = [i for i, p in enumerate(prefixes) if p is Carry or (p is None and i in is_obj)]
    scanned = [i for i, p in enumerate(prefixes) if _is_scanned(p)]
    carry_in = [values[i] for i in carried]
    xs = [_move(values[i], prefixes[i], 0) for i in scanned]
    jax_out = trees.out_prefix_for_jax(out_axes, _expand_axes)
    traced: dict[str, tp.Any] = {}

    def body(carry: list, x: list) -> tuple[list, tp.Any]:
        current = list(values)
        for i, v in zip(carried, carry):
            current[i] = v
        for i, v in zip(scanned, x):
            current[i] = v
        pure = (current[:n_leaves], current[n_leaves:])
        inner_args, objs = lift.enter(lifted.static, pure)
        out = fun(*inner_args)
        tree_carry = carry_arg if not lifted.static.graph else None
        if tree_carry is not None:
            marked = _mark_carried_variables(inner_args[tree_carry], out, out_axes, objs)
            traced["restore"] = marked is not out
            out = marked
        box, in_part, out_tree = lift.exit(
            "scan", lifted.static, objs, out, out_axes, _expand_axes, carry_arg=tree_carry
        )
        out_leaves, out_treedef = jax.tree_util.tree_flatten(out_tree)
        out_prefixes = trees.broadcast_prefix(jax_out, out_tree, lambda _: False)
        in_group_out = dict(zip(in_index, in_part))
        user_carry = [v for v, p in zip(out_leaves, out_prefixes) if p is Carry]
        user_ys = [v for v, p in zip(out_leaves, out_prefixes) if _is_scanned(p)]
        state_ys = [in_group_out[i] for i in scanned if i in is_obj]
        traced.update(box=box, out_treedef=out_treedef, out_prefixes=out_prefixes)
        user_iter = iter(user_carry)
        try:
            new_carry = [in_group_out[i] if i in is_obj else next(user_iter) for i in carried]
        except StopIteration:
            new_carry = None
        flat_new = None if new_carry is None else jax.tree.leaves(new_carry)
        expected = len(jax.tree.leaves(carry))
        if flat_new is None or len(flat_new) != expected or next(user_iter, None) is not None:
            raise ValueError(
                "nnx.scan: the carry returned by the function does not match the carry it "
                f"received: expected {expected} arrays"
            )
        return _restructure(flat_new, [jax.tree.structure(c) for c in carry]), (user_ys, state_ys)

    final_carry, (user_ys, state_ys) = jax.lax.scan(
        body, carry_in, xs, length=length, reverse=reverse, unroll=unroll,
        _split_transpose=split_transpose,
    )
    out_prefixes = traced["out_prefixes"]
    carry_by_index = dict(zip(carried, final_carry))
    state_ys_iter = iter(state_ys)
    in_part = []
    for i in in_index:
        if i in carry_by_index:
            in_part.append(carry_by_index[i])
        else:
            in_part.append(_move(next(state_ys_iter), 0, prefixes[i]) if i in scanned else values[i])
    carry_iter = iter([carry_by_index[i] for i in carried if i not in is_obj])
    ys_iter = iter(user_ys)
    out_leaves = [
        next(carry_iter) if p is Carry else _move(next(ys_iter), 0, p) for p in out_prefixes
    ]
    out_tree = jax.tree_util.tree_unflatten(traced["out_treedef"], out_leaves)
    out = lift.apply(lifted, (traced["box"], in_part, out_tree))
    if traced.get("restore"):
        out = _restore_carried_variables(out, lifted.originals)
    return out


def _restructure(flat: list, structures: list) -> list:
    """Regroup a flat list of arrays into trees of the given structures."""
    out, start = [], 0
    for treedef in structures:
        n = treedef.num_leaves
        out.append(jax.tree_util.tree_unflatten(treedef, flat[start : start + n]))
        start += n
    return out


# --------------------------------------------------------------------------- loops


def _loop_body(name: str, lifted: lift.Lifted, step: tp.Callable[[tp.Any], tp.Any]) -> tp.Callable:
    """Wrap ``step`` (value -> value) as a pure carry function checking the structure."""

    def body(pure: tp.Any) -> tp.Any:
        value, _ = lift.enter(lifted.static, pure)
        new_value = step(value)
        graph, graph_updates = lifted.static.graph, lifted.static.graph_updates
        relifted = lift.Lifted(
            name, new_value, None, graph=graph, graph_updates=graph_updates, coalesce=True
        )
        if not _same_structure(relifted, lifted, pure):
            raise ValueError(
                f"nnx.{name} requires body function's input and output to have the same "
                "reference and pytree structure, but they differ: the body changed the "
                "containers, graph nodes or Variables of the loop value"
            )
        return _match_types(relifted.pure, pure)

    return body


def _same_structure(new: lift.Lifted, old: lift.Lifted, old_pure: tp.Any) -> bool:
    """The body kept the carry's structure: same containers, graph (Variable types
    included) and state layout."""
    return new.static == old.static and jax.tree.structure(new.pure) == jax.tree.structure(old_pure)


def _match_types(new: tp.Any, old: tp.Any) -> tp.Any:
    """Keep the carry's dtypes and weak types stable across iterations."""
    return jax.tree.map(
        lambda n, o: n if not hasattr(o, "dtype") or n.dtype == o.dtype else n.astype(o.dtype),
        new,
        old,
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
    lifted = lift.Lifted(
        "while_loop", init_val, None, graph=mode[0], graph_updates=mode[1], coalesce=True
    )

    def cond(pure: tp.Any) -> tp.Any:
        value, _ = lift.enter(lifted.static, pure)
        return cond_fun(value)

    result = jax.lax.while_loop(cond, _loop_body("while_loop", lifted, body_fun), lifted.pure)
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
    lifted = lift.Lifted(
        "fori_loop", init_val, None, graph=mode[0], graph_updates=mode[1], coalesce=True
    )

    def body(i: tp.Any, pure: tp.Any) -> tp.Any:
        return _loop_body("fori_loop", lifted, lambda value: body_fun(i, value))(pure)

    result = jax.lax.fori_loop(lower, upper, body, lifted.pure, unroll=unroll)
    return lift.apply_same(lifted, result)
