"""Mutable array references (``jax.Ref``) across a JAX transform's boundary.

A ``ref=True`` Variable holds a ``jax.Ref``. JAX lets a transformed function take
a Ref and write into it, but not return one, while an NNX transform's pure
function returns the updated state of its inputs, which for such a Variable is
the traced Ref itself. :func:`returning_refs` swaps each input Ref in the output
for a static :class:`Hole` naming the input it came from, and :func:`restore`
fills the holes with the caller's Refs, which JAX has already updated in place.
"""

from __future__ import annotations

import dataclasses
import functools
import typing as tp

import jax


@dataclasses.dataclass(frozen=True)
class Hole:
    """Where an input Ref stood in a transform's output: the index of the input leaf."""

    index: int


jax.tree_util.register_static(Hole)


def _is_ref(x: tp.Any) -> bool:
    return isinstance(x, jax.Ref)


def returning_refs(fn: tp.Callable[..., tp.Any]) -> tp.Callable[..., tp.Any]:
    """``fn``, returning a :class:`Hole` wherever it would return one of its input Refs."""

    @functools.wraps(fn)
    def wrapped(*args: tp.Any) -> tp.Any:
        inputs = {id(x): i for i, x in enumerate(jax.tree_util.tree_leaves(args)) if _is_ref(x)}
        out = fn(*args)
        if not inputs:
            return out
        return jax.tree_util.tree_map(lambda x: Hole(inputs[id(x)]) if id(x) in inputs else x, out)

    return wrapped


def restore(out: tp.Any, args: tuple) -> tp.Any:
    """The output of a :func:`returning_refs` function called on ``args``, holes filled."""
    if not _has_holes(jax.tree_util.tree_structure(out)):
        return out
    inputs = jax.tree_util.tree_leaves(args)
    return jax.tree_util.tree_map(
        lambda x: inputs[x.index] if isinstance(x, Hole) else x, out, is_leaf=lambda x: isinstance(x, Hole)
    )


@functools.lru_cache(maxsize=256)
def _has_holes(treedef: jax.tree_util.PyTreeDef) -> bool:
    """Whether an output of this structure holds holes (outputs of one trace share a treedef)."""
    skeleton = jax.tree_util.tree_unflatten(treedef, [None] * treedef.num_leaves)
    found = jax.tree_util.tree_leaves(skeleton, is_leaf=lambda x: isinstance(x, Hole))
    return any(isinstance(x, Hole) for x in found)


def shapes_of_refs(tree: tp.Any) -> tp.Any:
    """``tree`` with each Ref replaced by its shape and dtype (what ``eval_shape`` gives back)."""
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype) if _is_ref(x) else x, tree)
