"""Update contexts: object identities kept across split -> transform -> merge round trips."""

from __future__ import annotations

import contextlib
import threading
import typing as tp

from ..statelib import from_flat_state, split_flat
from ._defs import RefMap
from ._split_merge import (
    GraphDef,
    collect_leaves,
    flatten_for,
    merge,
    split,
    unflatten_leaves,
)

A = tp.TypeVar("A")


class UpdateContext:
    """Keeps object identities across a split -> (transform) -> merge round trip.

    The outer ``split`` records ``outer_ref_index`` (object -> index); the inner
    ``merge`` records ``inner_index_ref`` (index -> new object); the inner ``split``
    reuses those indices for the inner objects; the outer ``merge`` maps indices back
    to the outer objects and updates them in place.
    """

    def __init__(self, tag: tp.Hashable) -> None:
        self.tag = tag
        self.outer_ref_index: RefMap | None = None
        self.inner_index_ref: dict[int, tp.Any] | None = None

    def split(self, node: A, *filters: tp.Any) -> tuple[tp.Any, ...]:
        ref_index = RefMap()
        if self.inner_index_ref is not None:
            for index, obj in self.inner_index_ref.items():
                ref_index[obj] = index
            self.inner_index_ref = None
        else:
            self.outer_ref_index = ref_index
        gdef, flat = flatten_for(node, True, "split", ref_index)
        groups = split_flat(flat, filters or (...,), exhaustive=True)
        return (gdef, *(from_flat_state(g) for g in groups))

    def merge(self, graphdef: GraphDef[A], state: tp.Any, /, *states: tp.Any, inner: bool | None = None) -> A:
        if inner is None:  # whether this merge is inside the transform or back outside
            raise ValueError("inner_merge must be specified when using ctxtag")
        leaves = collect_leaves((state, *states))
        if inner:
            index_ref: dict[int, tp.Any] = {}
            node = unflatten_leaves(graphdef, leaves, index_ref, False)
            self.inner_index_ref = index_ref
            return node
        outer = self.outer_ref_index or RefMap()
        index_ref = {index: outer.objects[id_] for id_, index in dict.items(outer)}
        node = unflatten_leaves(graphdef, leaves, index_ref, False)
        self.outer_ref_index = None
        return node


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
        _CONTEXTS.stacks[self.tag].pop()


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
    """What ``split_context(tag)`` yields: ``ctx.split(node, *filters)``."""

    def __init__(self, ctx: UpdateContext | None) -> None:
        self._ctx = ctx

    def split(self, node: A, *filters: tp.Any) -> tuple[tp.Any, ...]:
        return self._ctx.split(node, *filters) if self._ctx else split(node, *filters, graph=True)


class MergeContext:
    """What ``merge_context(tag, inner)`` yields: ``ctx.merge(graphdef, *states)``."""

    def __init__(self, ctx: UpdateContext | None, inner: bool | None) -> None:
        self._ctx, self._inner = ctx, inner

    def merge(self, graphdef: GraphDef[A], state: tp.Any, /, *states: tp.Any) -> A:
        if self._ctx is None:
            return merge(graphdef, state, *states)
        return self._ctx.merge(graphdef, state, *states, inner=self._inner)


@contextlib.contextmanager
def split_context(ctxtag: tp.Hashable | None = None) -> tp.Iterator[SplitContext]:
    """Yields a SplitContext tied to the active UpdateContext of ``ctxtag`` (if any)."""
    stack = _CONTEXTS.stacks.get(ctxtag) if ctxtag is not None else None
    yield SplitContext(stack[-1] if stack else None)


@contextlib.contextmanager
def merge_context(ctxtag: tp.Hashable | None = None, inner: bool | None = None) -> tp.Iterator[MergeContext]:
    """Yields a MergeContext tied to the active UpdateContext of ``ctxtag`` (if any)."""
    stack = _CONTEXTS.stacks.get(ctxtag) if ctxtag is not None else None
    yield MergeContext(stack[-1] if stack else None, inner)
