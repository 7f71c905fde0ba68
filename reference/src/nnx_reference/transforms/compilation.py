"""Compilation transforms: ``jit``, ``jit_partial``, ``shard_map`` and ``StateSharding``."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing as tp

import jax
from jax.sharding import PartitionSpec

from .. import graphlib
from . import _checks as checks
from . import _lift as lift
from . import _stages as stages
from . import _trees as trees
from ._jit_options import JitOptions, taking_jit_options
from ._prefix import PrefixMapping, VariablePrefix
from ._statics import Statics, insert_statics, remove_statics
from ._tree_jit import TreeJit
from .general import eval_shape

__all__ = ["StateSharding", "jit", "shard_map"]


class StateSharding(PrefixMapping):
    """Maps substates of a graph node (selected by filters) to shardings or specs.

    Used as an entry of ``in_shardings``/``out_shardings`` of :func:`jit` or of
    ``in_specs``/``out_specs`` of :func:`shard_map`. Substates that no filter
    selects are left unconstrained (``None``).
    """

    default = None

    def __init__(self, filter_sharding: tp.Any, /):
        super().__init__(filter_sharding)

    def _missing(self, path: tuple, variable: tp.Any) -> Exception:
        return ValueError(f"No axis found for {path=}, {variable=}")  # flax's words, for shardings too

    @property
    def shardings(self) -> tuple:
        return self._values


def _expand_sharding(prefix: tp.Any, obj: tp.Any = None) -> list:
    if isinstance(prefix, StateSharding):
        return prefix.groups()
    return trees.whole(prefix)


@dataclasses.dataclass(frozen=True)
class _Spec(VariablePrefix):
    """What jit needs to know about one argument leaf or substate."""

    sharding: tp.Any
    donate: bool

    def map_prefix(self, path: tuple, variable: tp.Any) -> tp.Any:
        """The sharding of the Variable at ``path``: what the aliasing check compares, as
        flax's (donation is no prefix there)."""
        if isinstance(self.sharding, PrefixMapping):
            return self.sharding.map_prefix(path, variable)
        return self.sharding


def _spec_tree(sharding: tp.Any, donate: bool) -> tp.Any:
    """One argument's sharding prefix tree (a State of shardings, ...) with ``_Spec`` leaves."""
    return jax.tree_util.tree_map(lambda s: _Spec(s, donate), sharding, is_leaf=lambda x: x is None)


def _expand_spec(prefix: _Spec, obj: tp.Any) -> list:
    return [(flt, _Spec(s, prefix.donate)) for flt, s in _expand_sharding(prefix.sharding, obj)]


def _normalize(argnums: int | tp.Sequence[int] | None) -> tuple[int, ...]:
    if argnums is None:
        return ()
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _names(argnames: str | tp.Iterable[str] | None) -> tuple[str, ...]:
    if argnames is None:
        return ()
    if isinstance(argnames, str):
        return (argnames,)
    names = tuple(argnames)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"argument is not a string: {name}")
    return names


def _infer(fun: tp.Callable, nums: tuple[int, ...], names: tuple[str, ...], given_both: bool):
    """Complete argnums from argnames and vice versa through the signature (as jax.jit);
    without ``*args`` in the signature, an argnum past its positional parameters raises, as there."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    n = len(positional)
    if not any(p.kind is p.VAR_POSITIONAL for p in params) and any(not -n <= i < n for i in nums):
        raise ValueError(f"Jitted function has static_argnums={nums}, but only accepts {n} positional arguments.")
    if given_both:
        return nums, names
    nums = tuple(sorted(set(nums) | {positional.index(n) for n in names if n in positional}))
    names = tuple(dict.fromkeys(names + tuple(positional[i] for i in nums if -n <= i < n)))
    return nums, names


def _is_donated(spec: tp.Any) -> bool:
    return isinstance(spec, _Spec) and spec.donate


def _sharding(spec: tp.Any) -> tp.Any:
    return spec.sharding if isinstance(spec, _Spec) else None


_NO_STATICS = Statics((), (), ())
"""What :func:`remove_statics` gives for a function without static arguments."""


class JitStatic(tp.NamedTuple):
    """The static argument of the compiled pure function: all the structure of a call."""

    inputs: lift.InStatic
    statics: Statics

    def __hash__(self) -> int:
        with graphlib.hashing_for_caches():  # the graphdefs of its inputs may hold unhashable statics
            return hash(tuple(self))


class _Prepared(tp.NamedTuple):
    """A call made ready for jax.jit: its lifted inputs, the compiled function, its arguments."""

    lifted: lift.Lifted
    jitted: jax.stages.Wrapped
    args: tuple[JitStatic, trees.Layout | None, trees.Layout]


class JitWrapped:
    """A function compiled with :func:`jit`: call it like the original."""

    def __init__(self, fun: tp.Callable, options: JitOptions):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.in_shardings = options.in_shardings
        self.out_shardings = options.out_shardings
        both = options.static_argnums is not None and options.static_argnames is not None
        self.static_argnums, self.static_argnames = _infer(
            fun, _normalize(options.static_argnums), _names(options.static_argnames), both
        )
        both = options.donate_argnums is not None and options.donate_argnames is not None
        self.donate_argnums, self.donate_argnames = _infer(
            fun, _normalize(options.donate_argnums), _names(options.donate_argnames), both
        )
        self.graph = options.graph
        self.graph_updates = options.graph_updates
        self._mode = trees.resolve_mode(self.graph, self.graph_updates)  # both given: the same at every call
        self._no_statics = not (self.static_argnums or self.static_argnames)
        self.plain = (
            self.in_shardings is None
            and self.out_shardings is None
            and not (self.donate_argnums or self.donate_argnames)
        )
        _refuse_placement_with_shardings(options.device, options.backend, self.in_shardings)
        self._jit_kwargs = dict(keep_unused=options.keep_unused, inline=options.inline)
        self._traced = trees.reported_as(fun, self._traced_fn())
        self.jitted_fn = jax.jit(self._traced, static_argnums=(0,), **self._jit_kwargs)
        self._tree_jit = TreeJit("jit", fun, self._jit_kwargs)
        self._jitted_by_layout: dict[_Frozen, jax.stages.Wrapped] = {}
        self._specs_by_positions: dict[tuple[int, tuple[int, ...]], tuple[tp.Any, ...]] = {}

    def __get__(self, obj: tp.Any, objtype: tp.Any = None) -> tp.Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _traced_fn(self) -> tp.Callable[[JitStatic, trees.Layout | None, trees.Layout], lift.Result]:
        """A function of its own for jax.jit to trace (named after the user's by ``reported_as``)."""

        def traced(static: JitStatic, donated: trees.Layout | None, kept: trees.Layout) -> lift.Result:
            return self._pure_fn(static, donated, kept)

        return traced

    def _pure_fn(self, static: JitStatic, donated: trees.Layout | None, kept: trees.Layout) -> lift.Result:
        """The pure function jax.jit compiles; ``static`` holds all structure."""
        entered = lift.enter(static.inputs, trees.join(donated, kept))
        dynamic_args, dynamic_kwargs = entered.args
        args, kwargs = insert_statics(dynamic_args, dynamic_kwargs, static.statics)
        out = self.fun(*args, **kwargs)
        return lift.exit(
            "jit",
            static.inputs,
            entered,
            out,
            self.out_shardings,
            _expand_sharding,
            same_prefixes=False,
            donated=_is_donated,
        )

    def _prepare(self, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], general: bool = False) -> _Prepared:
        """Lift the arguments and pick the compiled function for them; ``general`` lifts a
        plain call as one with shardings (writing back the whole structure with graph updates)."""
        self._refuse_keywords_with_in_shardings(kwargs)
        mode = trees.resolve_mode(self.graph, self.graph_updates)
        args, kwargs, statics = remove_statics(args, kwargs, self.static_argnums, self.static_argnames)
        if self.plain and not general:
            lifted = lift.lift("jit", (args, kwargs), None, mode, coalesce=True)
            return _Prepared(lifted, self.jitted_fn, (JitStatic(lifted.static, statics), None, lifted.pure))
        arg_specs = self._arg_specs(len(args), statics.positions)
        kw_specs = {k: _Spec(None, k in self.donate_argnames) for k in kwargs}
        lifted = lift.lift("jit", (args, kwargs), (arg_specs, kw_specs), mode, expand=_expand_spec)
        donated, kept = trees.partition(lifted.pure, lifted.prefix, _is_donated)
        return _Prepared(lifted, self._jitted_for(lifted), (JitStatic(lifted.static, statics), donated, kept))

    def _refuse_keywords_with_in_shardings(self, kwargs: dict[str, tp.Any]) -> None:
        """Raises as ``jax.jit`` does for keyword arguments when ``in_shardings`` is given."""
        if kwargs and self.in_shardings is not None:
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")

    def _arg_specs(self, n_dynamic: int, static_positions: tuple[int, ...]) -> tuple[tp.Any, ...]:
        """The prefix of the dynamic positional arguments: ``in_shardings`` with ``_Spec`` leaves."""
        key = (n_dynamic, static_positions)
        specs = self._specs_by_positions.get(key)
        if specs is None:
            positions = [i for i in range(n_dynamic + len(static_positions)) if i not in static_positions]
            shardings = self.in_shardings
            if type(shardings) not in (tuple, list):
                shardings = tuple(shardings for _ in positions)
            # one entry per dynamic argument: a tuple of another length is kept whole, for the
            # prefix check to refuse as jax.jit's does
            donated = [pos in self.donate_argnums for pos in positions]
            donated += [False] * (len(shardings) - len(donated))
            specs = tuple(_spec_tree(s, d) for s, d in zip(shardings, donated))
            self._specs_by_positions[key] = specs
        return specs

    def _jitted_for(self, lifted: lift.Lifted) -> jax.stages.Wrapped:
        """The jax.jit of the pure function for this layout of shardings and donations."""
        key = _Frozen(lifted.prefix)
        if key in self._jitted_by_layout:
            return self._jitted_by_layout[key]
        leaf_specs, group_specs = lifted.prefix
        donated_sh, kept_sh = trees.partition(
            trees.Layout([_sharding(p) for p in leaf_specs], [_sharding(p) for p in group_specs]),
            lifted.prefix,
            _is_donated,
        )
        options: dict[str, tp.Any] = dict(self._jit_kwargs)
        if any(_is_donated(p) for p in (*leaf_specs, *group_specs)):
            options["donate_argnums"] = (1,)
        if self.in_shardings is not None:
            options["in_shardings"] = (donated_sh, kept_sh)
        if self.in_shardings is not None or self.out_shardings is not None:
            in_part = [_sharding(p) for p in lifted.in_prefix()]
            if self.in_shardings is None:
                in_part = [None for _ in in_part]
            out = trees.out_prefix_for_jax(self.out_shardings, _expand_sharding)
            options["out_shardings"] = lift.Result(None, in_part, out)
        jitted = jax.jit(self._traced, static_argnums=(0,), **options)
        self._jitted_by_layout[key] = jitted
        return jitted

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        if self.plain:
            if self._no_statics:
                handled, out = self._tree_jit.call(args, kwargs, _NO_STATICS, self._mode)
            else:
                dynamic = remove_statics(args, kwargs, self.static_argnums, self.static_argnames)
                handled, out = self._tree_jit.call(*dynamic, self._mode)
            if handled:
                return out
        lifted, jitted, call_args = self._prepare(args, kwargs)
        return lift.apply(lifted, jitted(*call_args))

    def lower(self, *args: tp.Any, **kwargs: tp.Any) -> stages.Lowered:
        """Lower the underlying pure function for these arguments (see jax.jit); its
        compiled form is called with arguments like these."""
        return self.trace(*args, **kwargs).lower()

    def trace(self, *args: tp.Any, **kwargs: tp.Any) -> stages.Traced:
        """Trace the underlying pure function for these arguments (see jax.jit)."""
        return self._staged(args, kwargs, self._run_compiled)

    def _staged(self, args: tuple, kwargs: dict[str, tp.Any], run: stages.Run) -> stages.Traced:
        _, jitted, call_args = self._prepare(args, kwargs, general=True)
        return stages.Traced(jitted.trace(*call_args), run)

    def _run_compiled(self, compiled: tp.Callable[..., tp.Any], args: tuple, kwargs: dict[str, tp.Any]) -> tp.Any:
        """Calls ``compiled`` (the pure function lowered by :meth:`lower`) on the lifted
        arguments, its static structure baked in, and applies its updates."""
        lifted, _, (_, *dynamic) = self._prepare(args, kwargs, general=True)
        return lift.apply(lifted, compiled(*dynamic))

    def eval_shape(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        """The output's shapes and dtypes, without running and without updating inputs."""
        self._refuse_keywords_with_in_shardings(kwargs)
        return eval_shape(self.fun, *args, graph=self.graph, graph_updates=self.graph_updates, **kwargs)


def _refuse_placement_with_shardings(device: tp.Any, backend: str | None, in_shardings: tp.Any) -> None:
    """Raises as ``jax.jit`` does for a ``device`` or ``backend`` beside shardings: the
    output always has shardings (those of the updated inputs), so these are refused."""
    if device is None and backend is None:
        return
    given = "out_shardings" if in_shardings is None else "in_shardings"
    raise ValueError(f"If backend or device is specified on jit, then {given} should not be specified.")


class _Frozen:
    """A hashable-by-identity-of-content wrapper for unhashable prefix trees."""

    __slots__ = ("_key", "value")

    def __init__(self, value: tp.Any):
        self.value = value
        leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=lambda x: x is None)
        self._key = (treedef, tuple(repr(leaf) for leaf in leaves))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Frozen) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)


@tp.overload
def jit(fun: trees.Fn, /, **options: tp.Any) -> JitWrapped: ...
@tp.overload
def jit(**options: tp.Any) -> tp.Callable[[trees.Fn], JitWrapped]: ...
@taking_jit_options
def jit(
    fun: tp.Callable | trees.Missing = trees.MISSING, *, options: JitOptions
) -> JitWrapped | tp.Callable[[trees.Fn], JitWrapped]:
    """Lifted ``jax.jit``: Modules and Variables as arguments, their updates propagated."""
    trees.reject_bound_method("jit", fun)
    options = checked_options(options)
    return trees.decorator_or_call(fun, lambda f: JitWrapped(f, options))


def checked_options(options: JitOptions) -> JitOptions:
    """``options`` with the mode in force now (fixed when made, as flax's), once its
    shardings are checked."""
    mode = trees.resolve_mode(options.graph, options.graph_updates)
    checks.reject_variable_prefixes("jit", "in_shardings", options.in_shardings)
    checks.reject_variable_prefixes("jit", "out_shardings", options.out_shardings)
    checks.reject_prefix_objects("jit", options.in_shardings, StateSharding, mode, "in_shardings")
    checks.reject_prefix_objects("jit", options.out_shardings, StateSharding, mode, "out_shardings")
    return dataclasses.replace(options, graph=mode.graph, graph_updates=mode.graph_updates)


class ShardMapOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`shard_map`."""

    mesh: tp.Required[tp.Any]
    in_specs: tp.Required[tp.Any]
    out_specs: tp.Required[tp.Any]
    axis_names: tp.AbstractSet
    check_vma: bool
    graph: bool | None
    graph_updates: bool | None


@tp.overload
def shard_map(f: trees.Fn, /, **options: tp.Unpack[ShardMapOptions]) -> trees.Fn: ...
@tp.overload
def shard_map(**options: tp.Unpack[ShardMapOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def shard_map(
    f: tp.Callable | trees.Missing = trees.MISSING,
    *,
    mesh: tp.Any,
    in_specs: tp.Any,
    out_specs: tp.Any,
    axis_names: tp.AbstractSet = frozenset(),
    check_vma: bool = True,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.shard_map``: specs may be ``StateSharding`` for graph nodes."""
    trees.reject_bound_method("shard_map", f)
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's
    _reject_state_sharding(in_specs, out_specs, graph, graph_updates)

    def make(fun: tp.Callable) -> tp.Callable:
        @functools.wraps(fun)
        def wrapper(*args: tp.Any) -> tp.Any:
            mode = trees.resolve_mode(graph, graph_updates)
            _reject_state_sharding(in_specs, out_specs, graph, graph_updates)
            specs = in_specs if type(in_specs) in (tuple, list) else tuple(in_specs for _ in args)
            lifted = lift.lift("shard_map", args, tuple(specs), mode, expand=_expand_sharding, roots=(".args",))

            def pure_fn(pure: tp.Any) -> tp.Any:
                entered = lift.enter(lifted.static, pure)
                out = fun(*entered.args)
                return lift.exit("shard_map", lifted.static, entered, out, out_specs, _expand_sharding)

            jax_in = (_specs_or_replicated(lifted.prefix),)
            jax_out = lift.Result(
                _specs_or_replicated(None),
                _specs_or_replicated(lifted.in_prefix()),
                trees.out_prefix_for_jax(out_specs, _expand_sharding),
            )
            mapped = jax.shard_map(
                pure_fn,
                mesh=mesh,
                in_specs=jax_in,
                out_specs=jax_out,
                axis_names=axis_names,
                check_vma=check_vma,
            )
            return lift.apply(lifted, mapped(lifted.pure))

        return wrapper

    return trees.decorator_or_call(f, make)


def _reject_state_sharding(in_specs: tp.Any, out_specs: tp.Any, graph: bool | None, graph_updates: bool | None) -> None:
    mode = trees.resolve_mode(graph, graph_updates)
    checks.reject_prefix_objects("shard_map", in_specs, StateSharding, mode, "in_specs")
    checks.reject_prefix_objects("shard_map", out_specs, StateSharding, mode, "out_specs")


def _specs_or_replicated(prefix: tp.Any) -> tp.Any:
    """shard_map specs cannot be None: an unconstrained entry is replicated."""
    return jax.tree.map(lambda s: PartitionSpec() if s is None else s, prefix, is_leaf=lambda x: x is None)
