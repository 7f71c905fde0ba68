"""Pytree pieces the transforms share: the decorator forms, object tests, prefixes, layouts."""

from __future__ import annotations

import functools
import inspect
import typing as tp

import jax

from .. import variablelib
from ..filterlib import Filter
from ..graphlib import resolve_mode  # noqa: F401 (the transforms call it as trees.resolve_mode)
from ..module import Module
from ..pytreelib import Pytree


class Missing:
    """Sentinel for an omitted positional function argument (decorator form)."""


MISSING = Missing()


Fn = tp.Callable[..., tp.Any]
"""A user's function, or what a transform makes of it."""
R = tp.TypeVar("R")
Pure = tp.TypeVar("Pure", bound=Fn)


def decorator_or_call(f: Fn | Missing, make: tp.Callable[[Fn], R]) -> R | tp.Callable[[Fn], R]:
    """Support both ``@t`` / ``t(f, ...)`` and ``@t(...)`` forms."""
    if isinstance(f, Missing):
        return make
    return make(f)


def reject_bound_method(name: str, fun: tp.Any) -> None:
    """Raises for a Module's bound method, also inside ``functools.partial``s: its Module
    would escape the transform's lifting."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    if inspect.ismethod(fun) and isinstance(fun.__self__, Module):
        raise ValueError(
            f"nnx.{name} does not support bound methods. Use the decorator form @nnx.{name} or call "
            f"nnx.{name}(MyClass.method)(instance, ...) with the unbound method."
        )


Binding = tp.Literal["keywords", "always", "with defaults"]
"""When :func:`positional` binds the arguments to the function's signature: only when
keywords are passed, always (missing arguments raise), or always with the defaults of
the parameters not passed added (flax's vmap, scan and transform_metadata with graph
updates map every parameter of the function)."""


class _Source:
    """What JAX's errors read of a traced function (its name and code), without holding it."""

    def __init__(self, name: str, code: tp.Any) -> None:
        self.__name__ = name
        self.__code__ = code


def reported_as(fun: Fn, pure: Pure) -> Pure:
    """``pure`` (what a JAX transform traces for ``fun``) named after ``fun``, so that JAX's
    errors name the user's function and where it is defined, as flax's do. ``pure`` keeps its
    own signature, and holds ``fun``'s name and code only (pure functions are cached by ``fun``)."""
    source = inspect.unwrap(fun)
    while isinstance(source, functools.partial):
        source = inspect.unwrap(source.func)
    code = getattr(source, "__code__", None)
    if code is not None:
        pure.__signature__ = inspect.signature(pure)  # type: ignore[attr-defined]
        pure.__name__ = pure.__qualname__ = source.__name__
        pure.__wrapped__ = _Source(source.__name__, code)  # type: ignore[attr-defined]
    return pure


def positional(
    fun: Fn, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], binding: Binding = "keywords"
) -> tuple[tp.Any, ...]:
    """``args`` with ``kwargs`` moved to the positions of ``fun``'s parameters they name
    (the transforms map, carry and differentiate arguments by position). A
    ``functools.partial`` has no signature to bind to: it takes positional arguments only."""
    if not kwargs and binding == "keywords":
        return args
    if isinstance(fun, functools.partial):
        if kwargs:
            raise TypeError("keyword arguments could not be resolved to positions")
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    if binding == "with defaults":
        bound.apply_defaults()
    if bound.kwargs:
        raise TypeError("keyword arguments could not be resolved to positions")
    return bound.args


def is_variable(x: tp.Any) -> bool:
    return isinstance(x, variablelib.Variable)


def is_object(x: tp.Any) -> bool:
    """A graph object a transform must lift: a graph node or a Variable."""
    return isinstance(x, (variablelib.Variable, Pytree))


def is_node_leaf(x: tp.Any) -> bool:
    """Stop flattening at graph nodes whose children are not plain containers."""
    return is_object(x) and not isinstance(x, (list, tuple, dict))


class Layout(tp.NamedTuple):
    """The two parts of a lifted call's inputs, or of anything laid out like them
    (their prefixes, a partition of them): one entry per argument leaf (None where a
    graph object stood), then one per state group (or per Variable value)."""

    leaves: list[tp.Any]
    states: list[tp.Any]


def broadcast_prefix(prefix: tp.Any, tree: tp.Any, is_leaf: tp.Callable[[tp.Any], bool]) -> list[tp.Any]:
    """One prefix entry per leaf of ``tree`` (leaves as ``is_leaf`` stops them).

    ``prefix`` is a JAX tree prefix of ``tree``: any pytree (tuples, dicts,
    Module-shaped prefixes from ``nnx.prefix``) whose leaves (ints, None,
    StateAxes, Carry, shardings) apply to whole subtrees.
    """
    out: list[tp.Any] = []

    def spread(p: tp.Any, sub: tp.Any) -> None:
        out.extend([p] * len(jax.tree_util.tree_leaves(sub, is_leaf=is_leaf)))

    jax.tree_util.tree_map(spread, prefix, tree, is_leaf=lambda x: x is None)
    return out


class Partition(tp.NamedTuple):
    """A Layout split in two by a test of each entry's prefix; ``None`` fills the holes."""

    chosen: Layout
    rest: Layout


def partition(pure: Layout, prefix: Layout, select: tp.Callable[[tp.Any], bool]) -> Partition:
    """Split pure inputs into the entries whose prefix ``select`` picks, and the rest."""
    chosen = Layout(
        [v if select(p) else None for v, p in zip(pure.leaves, prefix.leaves)],
        [v if select(p) else None for v, p in zip(pure.states, prefix.states)],
    )
    rest = Layout(
        [None if select(p) else v for v, p in zip(pure.leaves, prefix.leaves)],
        [None if select(p) else v for v, p in zip(pure.states, prefix.states)],
    )
    return Partition(chosen, rest)


def join(chosen: Layout | None, rest: Layout) -> Layout:
    """Inverse of :func:`partition`."""
    if chosen is None:
        return rest
    return Layout(
        [a if a is not None else b for a, b in zip(chosen.leaves, rest.leaves)],
        [a if a is not None else b for a, b in zip(chosen.states, rest.states)],
    )


class ObjectStates:
    """A graph object inside a pure output tree: its State groups, in prefix order.

    (Not ``extract.NodeStates``, the public pytree view of a graph node.)
    """

    __slots__ = ("states",)

    def __init__(self, states: tuple[tp.Any, ...]):
        self.states = tuple(states)

    def __repr__(self) -> str:
        return f"ObjectStates({self.states!r})"


jax.tree_util.register_pytree_node(ObjectStates, lambda n: (n.states, None), lambda _, states: ObjectStates(states))


Expand = tp.Callable[[tp.Any, tp.Any], list[tuple[Filter, tp.Any]]]
"""``expand(prefix entry, object)``: the ``(filter, prefix entry)`` of each slice of the object."""


def whole(prefix: tp.Any, obj: tp.Any = None) -> list[tuple[Filter, tp.Any]]:
    """The default expansion: the whole object takes the prefix entry."""
    return [(..., prefix)]


def out_prefix_for_jax(prefix: tp.Any, expand: Expand = whole) -> tp.Any:
    """The user's output prefix as JAX sees it: multi-group entries become ObjectStates."""

    def convert(p: tp.Any) -> tp.Any:
        groups = expand(p, None)
        if len(groups) == 1 and groups[0][0] is ...:
            return groups[0][1]
        return ObjectStates(tuple(value for _, value in groups))

    return jax.tree_util.tree_map(convert, prefix, is_leaf=lambda x: type(x) not in (list, tuple, dict))


def holds_no_jax_type(value: tp.Any) -> bool:
    """Whether a leaf of ``value`` (graph nodes aside) is of no JAX type (a string, say)."""
    return any(not is_node_leaf(x) and not _is_jax_typed(x) for x in jax.tree.leaves(value, is_leaf=is_node_leaf))


def _is_jax_typed(x: tp.Any) -> bool:
    try:
        jax.typeof(x)
    except TypeError:
        return False
    return True
