"""Mutable array references (``jax.Ref``) across a JAX transform's boundary.

A ``ref=True`` Variable holds a ``jax.Ref``. JAX lets a transformed function take
a Ref and write into it, but not return one, while an NNX transform's pure
function returns the updated state of its inputs, which for such a Variable is
the traced Ref itself. ``lift.exit`` swaps each input Ref in what it returns for
a static :class:`Hole` naming the input it came from (:func:`to_holes`), and
``lift.apply`` fills the holes with the caller's Refs (:func:`fill_holes`), which
JAX has already updated in place. Whether a result holds holes is recorded in its
static part at trace time, so a call without Refs pays nothing.

A Ref made inside the call cannot leave it either. In graph mode with graph updates,
when the call was given at least one graph object or Variable, flax returns such a Ref
as its value and makes a new Ref of it outside: :func:`to_holes` wraps it in a
:class:`Fresh` and :func:`fill_holes` makes the new Ref. Otherwise JAX rejects it.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax

from ..reprlib import is_ref


@dataclasses.dataclass(frozen=True)
class Hole:
    """Where an input Ref stood in a transform's output: the index of the input leaf."""

    index: int


jax.tree_util.register_static(Hole)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Fresh:
    """A Ref made inside a transform, as its value: outside it becomes a new Ref."""

    value: tp.Any


def to_holes(tree: tp.Any, inputs: tp.Any, fresh: bool = False) -> tuple[tp.Any, bool]:
    """``tree`` with each Ref among the leaves of ``inputs`` swapped for a :class:`Hole`
    and, where ``fresh``, each other Ref for a :class:`Fresh` of its value; and whether
    any was swapped. Runs while tracing."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if not any(map(is_ref, leaves)):
        return tree, False
    index = {id(x): i for i, x in enumerate(jax.tree_util.tree_leaves(inputs)) if is_ref(x)}
    leaves = [Hole(index[id(x)]) if id(x) in index else Fresh(x[...]) if fresh and is_ref(x) else x for x in leaves]
    return jax.tree_util.tree_unflatten(treedef, leaves), True


def _is_placeholder(x: tp.Any) -> bool:
    return isinstance(x, (Hole, Fresh))


def fill_holes(tree: tp.Any, inputs: tp.Any) -> tp.Any:
    """``tree`` with each :class:`Hole` filled with the leaf of ``inputs`` it names, and
    each :class:`Fresh` with a new Ref of its value."""
    leaves = jax.tree_util.tree_leaves(inputs)

    def fill(x: tp.Any) -> tp.Any:
        if isinstance(x, Hole):
            return leaves[x.index]
        return jax.new_ref(x.value) if isinstance(x, Fresh) else x

    return jax.tree_util.tree_map(fill, tree, is_leaf=_is_placeholder)


def shapes_of_refs(tree: tp.Any) -> tp.Any:
    """``tree`` with each Ref replaced by its shape and dtype (what ``eval_shape`` gives back)."""
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype) if is_ref(x) else x, tree)


def read_refs(tree: tp.Any) -> tp.Any:
    """``tree`` with each Ref made inside a transform replaced by its value (such a Ref
    cannot leave the transform; what comes out is its shape, ``eval_shape``'s answer)."""
    return jax.tree_util.tree_map(lambda x: x[...] if is_ref(x) else x, tree)
