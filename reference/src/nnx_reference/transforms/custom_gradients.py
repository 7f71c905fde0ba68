"""``custom_vjp``: a function over graph nodes with a user-defined backward pass.

With graph updates (graph mode), the input updates are extra outputs and ``bwd``
receives ``(updates_g, out_g)``. Otherwise the arguments are pytrees, as with
``jax.custom_vjp``; the Variables ``f`` (or ``fwd``) updates are written back to the
caller's, and a ``bwd`` that declares an ``updates_g`` keyword receives their
cotangents.
"""

from __future__ import annotations

import functools
import inspect
import typing as tp

import jax

from ..graphlib import Mode
from ..statelib import State, merge_state, to_flat_state
from ..variablelib import Variable
from . import _checks as checks
from . import _lift as lift
from . import _trees as trees
from .autodiff import DiffPrefix, DiffState, expand_diff, is_diff, refuse_repeated, substate

__all__ = ["custom_vjp"]

Updates = tuple[list[tp.Any], ...]
"""Per argument, the new value of each of its Variables (in leaf order), None where unchanged."""


class CustomVjp:
    """A function with a custom backward pass over graph nodes; see :func:`custom_vjp`."""

    def __init__(self, fun: tp.Callable, nondiff_argnums: tuple, graph: bool | None, graph_updates: bool | None):
        functools.update_wrapper(self, fun)
        if graph and graph_updates:
            refuse_repeated(nondiff_argnums, "nondiff_argnums")
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums
        self.graph = graph
        self.graph_updates = graph_updates
        self.fwd: tp.Callable | None = None
        self.bwd: tp.Callable | None = None

    def defvjp(self, fwd: tp.Callable, bwd: tp.Callable, symbolic_zeros: bool = False) -> None:
        """Set the forward (``fwd(*args) -> (out, residuals)``) and backward functions."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        """Calls the function; keyword arguments are moved to the positions they name, as flax's."""
        args = trees.positional(self.fun, args, kwargs)
        mode = trees.resolve_mode(self.graph, self.graph_updates)
        checks.reject_prefix_objects("custom_vjp", self.nondiff_argnums, DiffState, mode, "nondiff_argnums")
        if mode != (True, True):
            return self._call_tree(args)
        return self._call_graph(args)

    def _check_defined(self, graph_updates: bool) -> None:
        """Raises when ``defvjp`` was not called: after the inputs' checks, as flax's, with
        jax's AttributeError except with graph updates."""
        if self.fwd is None:
            error = ValueError if graph_updates else AttributeError
            raise error(f"No VJP defined for custom_vjp function {self.__name__} using defvjp.")

    def _call_tree(self, args: tuple) -> tp.Any:
        """Without graph updates: ``jax.custom_vjp`` over the arguments as pytrees, the
        Variable updates an extra output whose cotangents ``bwd`` may take as ``updates_g``."""
        checks.check_no_sharing("custom_vjp", (args, {}))
        self._check_defined(graph_updates=False)
        nums = tuple(a for a in self.nondiff_argnums if isinstance(a, int))
        fun, fwd, bwd = self.fun, self.fwd, self.bwd
        takes_updates_g = "updates_g" in inspect.signature(bwd).parameters

        def pure_fn(*inner: tp.Any) -> tuple[tp.Any, Updates]:
            before = _values(inner)
            out = fun(*inner)
            return out, _updates(inner, before)

        def pure_fwd(*inner: tp.Any) -> tuple[tuple[tp.Any, Updates], tp.Any]:
            before = _values(inner)
            out, residuals = fwd(*inner)
            return (out, _updates(inner, before)), residuals

        def pure_bwd(*res_and_g: tp.Any) -> tp.Any:
            *nondiff, residuals, (out_g, updates_cotangents) = res_and_g
            if not takes_updates_g:
                return bwd(*nondiff, residuals, out_g)
            return bwd(*nondiff, residuals, out_g, updates_g=_updates_g(args, updates_cotangents))

        inner = jax.custom_vjp(pure_fn, nondiff_argnums=nums)
        inner.defvjp(pure_fwd, pure_bwd)
        out, updates = inner(*args)
        for variables, values in zip(_variables(args), updates):
            for variable, value in zip(variables, values):
                if value is not None:
                    variable.set_raw_value(value)
        return out

    def _call_graph(self, args: tuple) -> tp.Any:
        """Graph mode: input updates are extra outputs; ``bwd`` sees ``(updates_g, out_g)``."""
        filters: dict[int, tp.Any] = dict.fromkeys(range(len(args)), ...)
        for a in self.nondiff_argnums:
            if isinstance(a, DiffState):
                filters[a.argnum] = a.filter
            else:
                filters[a] = None
        nondiff = sorted(a for a in self.nondiff_argnums if isinstance(a, int))
        prefixes = tuple(DiffPrefix(filters[i], False) for i in range(len(args)))
        lifted = lift.lift("custom_vjp", (args, {}), (prefixes, {}), Mode(True, True), expand=expand_diff)
        _reject_nondiff_objects(args, nondiff)  # after the aliasing checks, as flax's
        self._check_defined(graph_updates=True)
        static = lifted.static
        diff, rest = trees.partition(lifted.pure, lifted.prefix, is_diff)
        fun, fwd, bwd = self.fun, self.fwd, self.bwd
        nums = tuple(range(len(args)))

        def run(user: tp.Callable[..., tp.Any], pure: trees.Layout) -> tuple[tp.Any, lift.Entered]:
            entered = lift.enter(static, pure)
            inner_args, _ = entered.args
            return user(*inner_args), entered

        @jax.custom_vjp
        def pure_fn(diff: trees.Layout, rest: trees.Layout) -> lift.Result:
            out, entered = run(fun, trees.join(diff, rest))
            return lift.exit("custom_vjp", static, entered, out)

        def pure_fwd(diff: trees.Layout, rest: trees.Layout) -> tuple[lift.Result, tp.Any]:
            (out, residuals), entered = run(fwd, trees.join(diff, rest))
            return lift.exit("custom_vjp", static, entered, out), (residuals, rest)

        def pure_bwd(res: tp.Any, g: tp.Any) -> tuple[tp.Any, tp.Any]:
            # as jax.custom_vjp's: the int nondiff_argnums' arguments come first, and
            # neither the input updates' cotangents nor the tangents include them
            residuals, rest = res
            _, in_part_g, out_g = g
            updates_g = _node_updates(lifted, in_part_g, len(nums))
            updates_g = tuple(u for i, u in enumerate(updates_g) if i not in nondiff)
            tangents = bwd(*(args[i] for i in nondiff), residuals, (updates_g, out_g))
            if not isinstance(tangents, tuple):
                tangents = (tangents,)
            tangents = _with_nondiff(tangents, nondiff)
            diff_g = _pure_tangents(lifted, diff, tangents)
            return diff_g, jax.tree.map(lambda x: None, rest)

        pure_fn.defvjp(pure_fwd, pure_bwd)
        return lift.apply(lifted, pure_fn(diff, rest))


def _reject_nondiff_objects(args: tuple, nondiff: list[int]) -> None:
    """Graph mode: an int in ``nondiff_argnums`` may not name an argument holding a graph
    node or Variable (flax's TypeError, naming the first one's path), nor a tracer (jax's
    error, as ``jax.custom_vjp`` checks its own ``nondiff_argnums``)."""
    for i in nondiff:
        if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args[i])):
            raise jax.errors.UnexpectedTracerError(
                "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position "
                f"indicated by nondiff_argnums as non-differentiable (argument {i}). Tracers cannot be passed "
                "as non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should "
                "only be used for arguments that can't be or contain JAX tracers."
            )
        found = jax.tree_util.tree_flatten_with_path(args[i], is_leaf=trees.is_object)[0]
        for path, leaf in found:
            if trees.is_object(leaf):
                raise TypeError(
                    "Passing integers to nondiff_argnums for graph nodes arguments in custom_vjp is not "
                    f"supported. Got False at path [{i}]{jax.tree_util.keystr(path)} for value {leaf}"
                )


def _with_nondiff(tangents: tuple, nondiff: list[int]) -> tuple:
    """The tangents of the differentiable arguments, with None at the nondiff ones."""
    remaining = iter(tangents)
    return tuple(None if i in nondiff else next(remaining, None) for i in range(len(tangents) + len(nondiff)))


def _variables(args: tuple) -> list[list[Variable[tp.Any]]]:
    """Per argument, its Variables in leaf order."""
    return [[v for v in jax.tree.leaves(arg, is_leaf=trees.is_variable) if trees.is_variable(v)] for arg in args]


def _values(args: tuple) -> list[list[tp.Any]]:
    """Per argument, the raw values of its Variables."""
    return [[v.get_raw_value() for v in variables] for variables in _variables(args)]


def _updates(args: tuple, before: list[list[tp.Any]]) -> Updates:
    """Per argument, each Variable's new value where the call replaced it, else None."""
    return tuple(
        [v.get_raw_value() if v.get_raw_value() is not old else None for v, old in zip(variables, values)]
        for variables, values in zip(_variables(args), before)
    )


def _updates_g(args: tuple, cotangents: Updates) -> tuple[tp.Any, ...]:
    """``updates_g``: each argument's structure with its updated Variables holding their
    cotangents and every other leaf None."""

    def per_arg(arg: tp.Any, values: list[tp.Any]) -> tp.Any:
        leaves, treedef = jax.tree.flatten(arg, is_leaf=trees.is_variable)
        remaining = iter(values)
        new_leaves = []
        for leaf in leaves:
            value = next(remaining) if trees.is_variable(leaf) else None
            new_leaves.append(None if value is None else leaf.copy(value))
        return jax.tree.unflatten(treedef, new_leaves)

    return tuple(per_arg(arg, values) for arg, values in zip(args, cotangents))


def _argument_slots(static: lift.InStatic) -> list[range]:
    """The leaf positions (objects as leaves) of each positional argument."""
    slots, start = [], 0
    for treedef in static.treedef.children()[0].children():
        slots.append(range(start, start + treedef.num_leaves))
        start += treedef.num_leaves
    return slots


def _pure_tangents(lifted: lift.Lifted, diff: tp.Any, tangents: tuple) -> tp.Any:
    """Put the user's per-argument tangents into the pure layout of ``diff``.

    Each tangent has its argument's structure, a State where the argument holds a graph
    node: each differentiable Variable takes the tangent at its path, and the State must
    hold those paths and no other (jax's TypeError, as flax's); the other leaves take theirs
    in place.
    """
    leaves, states = diff
    static = lifted.static
    arg_treedefs = static.treedef.children()[0].children()
    obj_at = {slot: k for k, slot in enumerate(static.obj_slots)}
    new_leaves, new_states = list(leaves), list(states)
    for slots, treedef, tangent in zip(_argument_slots(static), arg_treedefs, tangents):
        if tangent is None:
            continue
        for j, part in zip(slots, treedef.flatten_up_to(tangent)):
            if j not in obj_at:
                if new_leaves[j] is not None:
                    new_leaves[j] = part
                continue
            if part is None:
                continue
            _check_node_tangent(part)
            by_path = {tuple(p): v for p, v in to_flat_state(part)}
            groups = [gi for gi, group in enumerate(static.groups) if group.obj == obj_at[j] and states[gi] is not None]
            expected = {tuple(p)[2:] for gi in groups for p, _ in to_flat_state(states[gi])}
            if set(by_path) != expected:
                raise TypeError(
                    "Custom VJP bwd rule must produce an output with the same container (pytree) structure as "
                    "the args tuple of the primal function: the tangent of the graph node at argument "
                    f"{slots.start} holds the paths {sorted(by_path)}, its differentiable state {sorted(expected)}"
                )
            for gi in groups:
                values = [by_path[tuple(p)[2:]] for p, _ in to_flat_state(states[gi])]
                new_states[gi] = jax.tree.unflatten(jax.tree.structure(states[gi]), jax.tree.leaves(values))
    return trees.Layout(new_leaves, new_states)


def _check_node_tangent(tangent: tp.Any) -> None:
    """A graph node's tangent is a State (or a Variable): an array has the wrong type for
    jax.custom_vjp, anything else is refused as flax refuses it."""
    if isinstance(tangent, jax.Array):
        raise ValueError(
            "Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
            "primal function: a graph node's tangent is a State, got an array"
        )
    if not isinstance(tangent, State | Variable):
        raise ValueError(f"Expected State or Variable, got {type(tangent)}")


def _node_updates(lifted: lift.Lifted, in_part: list, n_args: int) -> tuple:
    """The cotangents of the input updates, one per argument with its structure: a State
    where it holds a graph node, None elsewhere."""
    static = lifted.static
    per_obj: dict[int, list] = {}
    for group, state in zip(static.groups, in_part):
        per_obj.setdefault(group.obj, []).append(substate(state, (0, group.obj)))
    obj_at = {slot: k for k, slot in enumerate(static.obj_slots)}
    arg_treedefs = static.treedef.children()[0].children()
    return tuple(
        treedef.unflatten([merge_state(*per_obj[obj_at[j]]) if j in obj_at else None for j in slots])
        for slots, treedef in list(zip(_argument_slots(static), arg_treedefs))[:n_args]
    )


class CustomVjpOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`custom_vjp`."""

    nondiff_argnums: tuple[int | DiffState, ...]
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def custom_vjp(fun: trees.Fn, /, **options: tp.Unpack[CustomVjpOptions]) -> CustomVjp: ...
@tp.overload
def custom_vjp(**options: tp.Unpack[CustomVjpOptions]) -> tp.Callable[[trees.Fn], CustomVjp]: ...
def custom_vjp(
    fun: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *,
    nondiff_argnums: tuple[int | DiffState, ...] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> CustomVjp | tp.Callable[[trees.Fn], CustomVjp]:
    """Lifted ``jax.custom_vjp``: Modules as arguments; define the rule with ``defvjp``."""
    trees.reject_bound_method("custom_vjp", fun)
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's
    checks.reject_prefix_objects(
        "custom_vjp",
        nondiff_argnums,
        DiffState,
        trees.resolve_mode(graph, graph_updates),
        "nondiff_argnums",
    )
    return trees.decorator_or_call(fun, lambda f: CustomVjp(f, tuple(nondiff_argnums), graph, graph_updates))
