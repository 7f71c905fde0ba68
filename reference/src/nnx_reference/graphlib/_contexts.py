"""Update contexts: object identities kept across split -> transform -> merge round trips."""

from __future__ import annotations

import contextlib
import threading
import typing as tp

from ..statelib import split_flat
from ._defs import RefMap
from ._split_merge import GraphDef, collect_leaves, flatten_for, split_state, unflatten_leaves
from ._unflatten import Reuse

A = tp.TypeVar("A")


class UpdateContext:
    """Keeps object identities across a split -> (transform) -> merge round trip.

    The outer ``split_context`` (1) records ``outer_ref_index`` (outer object -> index);
    the inner ``merge_context`` (2) records ``inner_ref_outer_index`` (inner object -> the
    index it was merged from, an outer index); the inner ``split_context`` (3) records
    that outer index in its GraphDefs and clears the map; the outer ``merge_context`` (4)
    rebuilds the outer object of each outer index in place and clears ``outer_ref_index``.
    """

    def __init__(self, tag: tp.Hashable) -> None:
        self.tag = tag
        self.outer_ref_index: RefMap | None = None
        self.inner_ref_outer_index: RefMap | None = None

    # Opaque, as flax's: all UpdateContexts are equal and hash alike, so one can be a static
    # argument (of jax.jit) without its maps taking part in the comparison.
    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UpdateContext)


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
        stack = _CONTEXTS.stacks.get(self.tag)
        if not stack:
            raise RuntimeError(f"No update context found for tag {self.tag!r}, it was never entered.")
        stack.pop()
        if not stack:
            del _CONTEXTS.stacks[self.tag]


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
    """What ``split_context(tag)`` yields: ``ctx.split(node, *filters)``. Its splits share
    one index, so an object an earlier split reached is a reference, without state, in a
    later one. Under a tag it is the inner split (3) once an outer one (1) was recorded."""

    def __init__(self, ctx: UpdateContext | None) -> None:
        self._ctx = ctx
        self._inner = ctx is not None and ctx.outer_ref_index is not None
        self._ref_index = RefMap()
        self._visited: set[int] = set()

    def split(self, node: A, *filters: tp.Any) -> tuple[tp.Any, ...]:
        # any split under a tag records the outer index an inner merge left (as flax's, an
        # outer one too, after a round trip whose inner split was left out)
        outer = self._ctx.inner_ref_outer_index if self._ctx is not None else None
        gdef, flat = flatten_for(node, True, "split", self._ref_index, visited=self._visited, ref_outer_index=outer)
        groups = split_flat(flat, filters or (...,), exhaustive=True)
        return (gdef, *(split_state(group) for group in groups))

    def _end(self) -> None:
        if self._ctx is None:
            return
        if self._inner:
            self._ctx.inner_ref_outer_index = None
        else:
            self._ctx.outer_ref_index = self._ref_index


class MergeContext:
    """What ``merge_context(tag, inner)`` yields: ``ctx.merge(graphdef, *states)``. Its
    merges share one index, so a reference is the object an earlier merge made, and a
    node an earlier merge made cannot be made again (RuntimeError); each merge copies the
    Variables of its states. Under a tag, ``inner`` says which merge it is: (2) or (4)."""

    def __init__(self, ctxtag: tp.Hashable | None, inner: bool | None) -> None:
        self._ctxtag, self._inner = ctxtag, inner
        self._index_ref: dict[int, tp.Any] = {}

    def merge(self, graphdef: GraphDef[A], state: tp.Any, /, *states: tp.Any) -> A:
        if not isinstance(graphdef, GraphDef):
            raise TypeError(f"Expected a GraphDef object, got: {graphdef!r}")
        ctx = self._update_context()
        outer = None
        if ctx is not None and not self._inner and ctx.outer_ref_index is not None:
            outer = {index: obj for obj, index in ctx.outer_ref_index.items()}
        leaves = collect_leaves((state, *states))
        return unflatten_leaves(graphdef, leaves, self._index_ref, True, reuse=Reuse(outer, in_place=False))

    def _update_context(self) -> UpdateContext | None:
        if self._ctxtag is None:
            return None
        if self._inner is None:  # whether this merge is inside the transform or back outside
            raise ValueError("inner_merge must be specified when using ctxtag")
        return current_update_context(self._ctxtag)

    def _end(self) -> None:
        ctx = self._update_context()
        if ctx is None:
            return
        if self._inner:
            ctx.inner_ref_outer_index = RefMap((obj, index) for index, obj in self._index_ref.items())
        else:
            ctx.outer_ref_index = None


@contextlib.contextmanager
def split_context(ctxtag: tp.Hashable | None = None) -> tp.Iterator[SplitContext]:
    """Yields a SplitContext; with ``ctxtag``, tied to the active UpdateContext of that tag
    (a ValueError where there is none)."""
    context = SplitContext(current_update_context(ctxtag) if ctxtag is not None else None)
    try:
        yield context
    finally:
        context._end()


@contextlib.contextmanager
def merge_context(ctxtag: tp.Hashable | None = None, inner: bool | None = None) -> tp.Iterator[MergeContext]:
    """Yields a MergeContext; with ``ctxtag``, tied to the active UpdateContext of that tag
    (a ValueError, at each merge and on exit, where there is none or ``inner`` is not given)."""
    context = MergeContext(ctxtag, inner)
    try:
        yield context
    finally:
        context._end()
