"""Differentiation transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``remat``."""

from __future__ import annotations

import dataclasses
import functools
import typing as tp

import jax

from .. import graphlib
from ..filterlib import to_predicate
from ..graphlib import Mode
from ..statelib import State
from ..variablelib import Param
from . import _checks as checks
from . import _lift as lift
from . import _trees as trees
from ._hijax_trees import from_jax
from ._prefix import VariablePrefix
from ._statics import insert_statics, remove_statics

__all__ = ["DiffState", "grad", "jvp", "remat", "value_and_grad", "vjp"]


@dataclasses.dataclass(frozen=True)
class DiffState:
    """Selects the differentiable substate (``filter``) of the graph node at ``argnum``."""

    argnum: int
    filter: tp.Any

    def map_prefix(self, path: tuple, variable: tp.Any) -> bool:
        """Whether the Variable at ``path`` is differentiated."""
        return to_predicate(self.filter)(path, variable)


@dataclasses.dataclass(frozen=True)
class DiffPrefix(VariablePrefix):
    """The prefix entry of an argument: differentiate it, and which substate if a node."""

    filter: tp.Any  # None: not differentiated
    # what the aliasing check gives the Variables of an argument not differentiated: flax's
    # grad with graph updates None, custom_vjp and grad without graph updates False
    undifferentiated: bool | None = dataclasses.field(default=None, compare=False)

    def map_prefix(self, path: tuple, variable: tp.Any) -> bool | None:
        """Whether the Variable at ``path`` is differentiated, as the aliasing check compares
        and flax's error writes it."""
        if self.filter is None:
            return self.undifferentiated
        return to_predicate(self.filter)(path, variable)


def expand_diff(prefix: DiffPrefix, obj: tp.Any) -> list:
    """A graph node splits into its differentiable substate and the rest; a bare
    Variable of a differentiated argument is differentiated whatever its type."""
    if prefix.filter is None or trees.is_variable(obj):
        return [(..., prefix)]
    return [(prefix.filter, prefix), (..., DiffPrefix(None))]


def is_diff(prefix: tp.Any) -> bool:
    return isinstance(prefix, DiffPrefix) and prefix.filter is not None


def _arg_prefixes(argnums: tuple, n_args: int) -> tuple:
    filters: dict[int, tp.Any] = {}
    for a in argnums:
        if isinstance(a, DiffState):
            filters[a.argnum] = a.filter
        else:
            filters[a] = Param
    return tuple(DiffPrefix(filters.get(i)) for i in range(n_args))


def _argnum(a: int | DiffState) -> int:
    return a.argnum if isinstance(a, DiffState) else a


def substate(state: tp.Any, keys: tuple) -> tp.Any:
    """The sub-State of ``state`` under ``keys`` (an empty State when absent)."""
    for key in keys:
        try:
            state = state[key]
        except (KeyError, IndexError, TypeError):
            return State({})
    return state


def _per_arg_grads(lifted: lift.Lifted, grads: tp.Any, argnums: tuple) -> tuple:
    """Rebuild one gradient per differentiated argument from pure-shaped gradients."""
    leaves, states = grads
    static = lifted.static
    arg_treedefs = static.treedef.children()[0].children()
    starts = [0]
    for t in arg_treedefs:
        starts.append(starts[-1] + t.num_leaves)
    node_grads: dict[int, tp.Any] = {}
    if static.graph and not static.graph_updates:
        # shared Variables without graph updates: gradients are copies of the objects,
        # each Variable holding its gradient (the other groups are never returned)
        given = from_jax(lifted.pure.states)
        full = [g if is_diff(group.prefix) else s for group, g, s in zip(static.groups, states, given)]
        objs, _ = graphlib.merge(static.graphdef, *full)
        for group in static.groups:
            if is_diff(group.prefix):
                node_grads[static.obj_slots[group.obj]] = objs[group.obj]
    elif static.graph:
        for group, state in zip(static.groups, states):
            if is_diff(group.prefix):
                node_grads[static.obj_slots[group.obj]] = substate(state, (0, group.obj))
    out = []
    for a in argnums:
        i = _argnum(a)
        arg_leaves = [node_grads.get(j, leaves[j]) for j in range(starts[i], starts[i + 1])]
        out.append(jax.tree_util.tree_unflatten(arg_treedefs[i], arg_leaves))
    return tuple(out)


def _as_tuple(argnums: tp.Any) -> tuple:
    return (argnums,) if isinstance(argnums, (int, DiffState)) else tuple(argnums)


def _check_tree_mode_argnums(name: str, argnums: tuple[int | DiffState, ...], mode: Mode) -> None:
    """DiffStates need graph updates, where an argument may be named once only."""
    checks.reject_prefix_objects(name, argnums, DiffState, mode, "argnums")
    if mode.graph_updates:
        refuse_repeated(argnums, "argnums")


def refuse_repeated(argnums: tp.Iterable[int | DiffState], argname: str) -> None:
    """Raises, as flax does with graph updates, when ``argnums`` names a position twice."""
    seen: set[int] = set()
    for a in argnums:
        if _argnum(a) in seen:
            raise ValueError(f"argnum {_argnum(a)} is repeated in {argname}")
        seen.add(_argnum(a))


def _check_positional_count(argnums: int | tuple[int, ...], args: tuple) -> None:
    """Raises, as ``jax.grad`` does, when ``argnums`` names a position the caller did not pass
    (and ``ValueError`` for an empty ``argnums``, as flax's)."""
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not positions:
        raise ValueError(f"Cannot differentiate with respect to no argument: {argnums=} is empty.")
    needed = max(positions) + 1
    if needed > len(args):
        raise TypeError(
            f"differentiating with respect to {argnums=} requires at least {needed} positional "
            f"arguments to be passed by the caller, but got only {len(args)} positional arguments."
        )


def _grad_call(
    name: str,
    fun: tp.Callable,
    argnums: int | DiffState | tp.Sequence[int | DiffState],
    has_aux: bool,
    holomorphic: bool,
    allow_int: bool,
    graph: bool | None,
    graph_updates: bool | None,
    args: tuple,
    kwargs: dict[str, tp.Any],
) -> tuple[tp.Any, tp.Any]:
    """Run ``fun`` under ``jax.value_and_grad``; returns ``(value, grads)``.

    With graph updates, the arguments are bound to ``fun``'s signature first (missing ones
    raise there, as in flax) and keyword arguments move to the positions they name;
    otherwise they are lifted with the arguments, undifferentiated, as ``jax.grad``'s are
    not, so that the function may update their Variables."""
    single = isinstance(argnums, (int, DiffState))
    nums = (argnums,) if single else tuple(argnums)
    mode = trees.resolve_mode(graph, graph_updates)
    _check_tree_mode_argnums(name, nums, mode)
    if mode.graph_updates:
        args, kwargs = trees.positional(fun, args, kwargs, "always"), {}
    positions = tuple(n.argnum if isinstance(n, DiffState) else n for n in nums)
    _check_positional_count(positions[0] if single else positions, args)
    prefixes = _arg_prefixes(nums, len(args))
    if not mode.graph_updates:  # the whole argument is differentiated, as a tree
        prefixes = tuple(DiffPrefix(... if p.filter is not None else None, False) for p in prefixes)
    kwarg_prefixes = {key: DiffPrefix(None, False) for key in kwargs}
    lifted = lift.lift(name, (args, kwargs), (prefixes, kwarg_prefixes), mode, expand=expand_diff)
    diff, rest = trees.partition(lifted.pure, lifted.prefix, is_diff)

    def pure_fn(diff: tp.Any, rest: tp.Any) -> tuple[tp.Any, tp.Any]:
        entered = lift.enter(lifted.static, trees.join(diff, rest))
        inner_args, inner_kwargs = entered.args
        out = fun(*inner_args, **inner_kwargs)
        value, aux = out if has_aux else (out, None)
        # the output checked and passed out is (value, aux), where flax's errors name its paths;
        # an input returned in it takes no differentiation prefix (outputs have none)
        return value, lift.exit(name, lifted.static, entered, (value, aux), same_prefixes=False)

    (value, result), grads = jax.value_and_grad(pure_fn, has_aux=True, holomorphic=holomorphic, allow_int=allow_int)(
        diff, rest
    )
    _, aux = lift.apply(lifted, result)
    per_arg = _per_arg_grads(lifted, from_jax(grads), nums)
    return ((value, aux) if has_aux else value), (per_arg[0] if single else per_arg)


class _GradCall(tp.NamedTuple):
    """What ``grad`` or ``value_and_grad`` was made with (the mode fixed when made, as flax's)."""

    name: str  # "grad" or "value_and_grad"
    argnums: int | DiffState | tp.Sequence[int | DiffState]
    has_aux: bool
    holomorphic: bool
    allow_int: bool
    graph: bool
    graph_updates: bool

    def __call__(self, fun: tp.Callable, args: tuple, kwargs: dict[str, tp.Any]) -> tp.Any:
        value, grads = _grad_call(
            self.name,
            fun,
            self.argnums,
            self.has_aux,
            self.holomorphic,
            self.allow_int,
            self.graph,
            self.graph_updates,
            args,
            kwargs,
        )
        if self.name == "value_and_grad":
            return value, grads
        return (grads, value[1]) if self.has_aux else grads


def _grad_general(options: _GradCall, fun: tp.Callable) -> tp.Callable:
    """The function ``grad`` and ``value_and_grad`` return. As flax's, it is named after the
    wrapper of its mode (``grad_wrapper``; ``tree_grad_wrapper`` in tree mode or without graph
    updates) and, unlike the other transforms' functions, keeps nothing of ``fun``'s: no name,
    docstring or ``__wrapped__``."""
    if options.graph and options.graph_updates:

        def grad_wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            return options(fun, args, kwargs)

        return grad_wrapper

    def tree_grad_wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        return options(fun, args, kwargs)

    return tree_grad_wrapper


def _refuse_reduce_axes(name: str, reduce_axes: tp.Sequence[tp.Hashable]) -> None:
    """Raises as flax does for a non-empty ``reduce_axes``, which jax no longer takes."""
    if reduce_axes:
        raise NotImplementedError(f"reduce_axes argument to {name} is deprecated")


class GradOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`grad` and :func:`value_and_grad`."""

    argnums: int | DiffState | tp.Sequence[int | DiffState]
    has_aux: bool
    holomorphic: bool
    allow_int: bool
    reduce_axes: tp.Sequence[tp.Hashable]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def grad(f: trees.Fn, /, **options: tp.Unpack[GradOptions]) -> trees.Fn: ...
@tp.overload
def grad(**options: tp.Unpack[GradOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def grad(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *,
    argnums: int | DiffState | tp.Sequence[int | DiffState] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: tp.Sequence[tp.Hashable] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.grad``: gradients of graph nodes are States of their Params
    (or of the ``DiffState`` filter); in tree mode they have the argument's type."""
    _refuse_reduce_axes("grad", reduce_axes)
    trees.reject_bound_method("grad", f)
    options = _GradCall("grad", argnums, has_aux, holomorphic, allow_int, *trees.resolve_mode(graph, graph_updates))
    _check_tree_mode_argnums("grad", _as_tuple(argnums), Mode(options.graph, options.graph_updates))
    return trees.decorator_or_call(f, functools.partial(_grad_general, options))


@tp.overload
def value_and_grad(f: trees.Fn, /, **options: tp.Unpack[GradOptions]) -> trees.Fn: ...
@tp.overload
def value_and_grad(**options: tp.Unpack[GradOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def value_and_grad(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *,
    argnums: int | DiffState | tp.Sequence[int | DiffState] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: tp.Sequence[tp.Hashable] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Like :func:`grad`, returning ``(value, grads)`` (``((value, aux), grads)`` with aux)."""
    _refuse_reduce_axes("value_and_grad", reduce_axes)
    trees.reject_bound_method("value_and_grad", f)
    options = _GradCall(
        "value_and_grad", argnums, has_aux, holomorphic, allow_int, *trees.resolve_mode(graph, graph_updates)
    )
    # flax's message for a DiffState without graph updates names grad here too
    _check_tree_mode_argnums("grad", _as_tuple(argnums), Mode(options.graph, options.graph_updates))
    return trees.decorator_or_call(f, functools.partial(_grad_general, options))


def _all_diff(n_args: int) -> tuple:
    return tuple(DiffPrefix(...) for _ in range(n_args))


def _without_graph_updates(name: str, graph: bool | None, graph_updates: bool | None) -> Mode:
    """The mode of a jvp or vjp call, which do not take graph mode with graph updates."""
    mode = trees.resolve_mode(graph, graph_updates)
    if mode.graph_updates:
        raise NotImplementedError(
            f"graph-mode with graph_updates is not supported for nnx.{name}. Set graph=False or graph_updates=False."
        )
    return mode


def _given_later(
    transform: tp.Callable[..., tp.Any],
    f: trees.Fn | trees.Missing,
    has_aux: bool,
    graph: bool | None,
    graph_updates: bool | None,
) -> functools.partial[tp.Any]:
    """What ``vjp`` and ``jvp`` give when not given their inputs, as flax's do: the transform
    with ``f`` (if given), ``has_aux`` and both mode settings as they stand now (the global
    default for one not given), called later with the rest."""
    head = () if isinstance(f, trees.Missing) else (f,)
    updates = graphlib.graph_updates() if graph_updates is None else graph_updates
    return functools.partial(
        transform, *head, has_aux=has_aux, graph=graphlib.resolve_graph(graph), graph_updates=updates
    )


class VjpOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`vjp`."""

    has_aux: bool
    reduce_axes: tp.Sequence[tp.Hashable]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def vjp(f: trees.Fn, primal: tp.Any, /, *primals: tp.Any, **options: tp.Unpack[VjpOptions]) -> tuple[tp.Any, ...]: ...
@tp.overload
def vjp(f: trees.Fn = ..., /, **options: tp.Unpack[VjpOptions]) -> functools.partial[tp.Any]: ...
def vjp(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *primals: tp.Any,
    has_aux: bool = False,
    reduce_axes: tp.Sequence[tp.Hashable] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.vjp``: returns ``(primals_out, vjp_fn)`` (and ``aux`` with has_aux);
    without primals, see :func:`_given_later`."""
    mode = _without_graph_updates("vjp", graph, graph_updates)
    _refuse_reduce_axes("vjp", reduce_axes)
    if not isinstance(f, trees.Missing):
        trees.reject_bound_method("vjp", f)
    if isinstance(f, trees.Missing) or not primals:
        return _given_later(vjp, f, has_aux, graph, graph_updates)
    lifted = lift.lift(
        "vjp", (primals, {}), (_all_diff(len(primals)), {}), mode, expand=expand_diff, roots=(".primals", ".kwargs")
    )

    def pure_fn(pure: tp.Any) -> tuple[tp.Any, tp.Any]:
        entered = lift.enter(lifted.static, pure)
        inner_args, _ = entered.args
        out = f(*inner_args)
        value, aux = out if has_aux else (out, None)
        return value, lift.exit("vjp", lifted.static, entered, aux)

    primals_out, raw_vjp, result = jax.vjp(pure_fn, lifted.pure, has_aux=True)
    aux = lift.apply(lifted, result)
    nums = tuple(range(len(primals)))

    def vjp_fn(cotangent: tp.Any) -> tuple:
        (grads,) = raw_vjp(cotangent)
        return _per_arg_grads(lifted, grads, nums)

    return (primals_out, vjp_fn, aux) if has_aux else (primals_out, vjp_fn)


class JvpOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`jvp`."""

    has_aux: bool
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def jvp(f: trees.Fn, primals: tuple, tangents: tuple, /, **options: tp.Unpack[JvpOptions]) -> tuple[tp.Any, ...]: ...
@tp.overload
def jvp(f: trees.Fn = ..., primals: tuple = ..., /, **options: tp.Unpack[JvpOptions]) -> functools.partial[tp.Any]: ...
def jvp(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    primals: tuple | trees.Missing = trees.MISSING,
    tangents: tuple | trees.Missing = trees.MISSING,
    *,
    has_aux: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.jvp``: returns ``(primals_out, tangent_out)`` (and ``aux`` with has_aux).

    Tangents of graph nodes have the node's structure (e.g. ``jax.tree.map(jnp.zeros_like, m)``).
    Without the primals or the tangents, see :func:`_given_later` (primals given alone are dropped).
    """
    mode = _without_graph_updates("jvp", graph, graph_updates)
    if not isinstance(f, trees.Missing):
        trees.reject_bound_method("jvp", f)
    if isinstance(primals, trees.Missing) or isinstance(tangents, trees.Missing):
        return _given_later(jvp, f, has_aux, graph, graph_updates)
    lifted = lift.lift("jvp", tuple(primals), None, mode, coalesce=True, roots=(".primals",))
    tangent = lift.lift("jvp", tuple(tangents), None, mode, coalesce=True, roots=(".tangents",))

    def pure_fn(pure: tp.Any) -> tuple[tp.Any, tp.Any]:
        entered = lift.enter(lifted.static, pure)
        out = f(*entered.args)
        value, aux = out if has_aux else (out, None)
        return value, lift.exit("jvp", lifted.static, entered, aux)

    primals_out, tangent_out, result = jax.jvp(pure_fn, (lifted.pure,), (tangent.pure,), has_aux=True)
    aux = lift.apply(lifted, result)
    return (primals_out, tangent_out, aux) if has_aux else (primals_out, tangent_out)


class RematOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`remat`."""

    prevent_cse: bool
    static_argnums: int | tuple[int, ...]
    policy: tp.Callable[..., bool] | None
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def remat(f: trees.Fn, /, **options: tp.Unpack[RematOptions]) -> trees.Fn: ...
@tp.overload
def remat(**options: tp.Unpack[RematOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def remat(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: tp.Callable[..., bool] | None = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.checkpoint``: recompute ``f``'s intermediates in the backward pass."""
    trees.reject_bound_method("remat", f)
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    def make(fun: tp.Callable) -> tp.Callable:
        @functools.wraps(fun)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            dyn_args, dyn_kwargs, statics = remove_statics(args, kwargs, nums, ())
            mode = trees.resolve_mode(graph, graph_updates)
            lifted = lift.lift("remat", (dyn_args, dyn_kwargs), None, mode, coalesce=True)

            def pure_fn(pure: tp.Any) -> tp.Any:
                entered = lift.enter(lifted.static, pure)
                full, full_kwargs = insert_statics(*entered.args, statics)
                return lift.exit("remat", lifted.static, entered, fun(*full, **full_kwargs))

            checkpointed = jax.checkpoint(trees.reported_as(fun, pure_fn), prevent_cse=prevent_cse, policy=policy)
            return lift.apply(lifted, checkpointed(lifted.pure))

        return wrapper

    return trees.decorator_or_call(f, make)
