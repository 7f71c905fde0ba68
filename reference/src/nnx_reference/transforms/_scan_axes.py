"""The axes ``scan`` with graph updates refuses as it meets its inputs and outputs, with
flax's messages: a StateAxes on an array, an axis that is no axis, an integer axis on a
non-array input."""

from __future__ import annotations

import typing as tp

import jax
import numpy as np

from . import _trees as trees
from .iteration import Carry, StateAxes


def _axis_problem(prefix: tp.Any, x: tp.Any, output: bool) -> str | None:
    """What flax's scan with graph updates says of the axis ``prefix`` for ``x``, if it refuses it."""
    if trees.is_object(x):
        if isinstance(prefix, StateAxes):
            for flt, axis in prefix.items() if output else ():
                if not (axis is None or axis is Carry or isinstance(axis, int)):
                    return f"Invalid axes {axis} for filter {flt}"
            return None
        return None if prefix is None or prefix is Carry or isinstance(prefix, int) else f"Invalid axes {prefix}"
    if isinstance(prefix, StateAxes):
        return f"Cannot use StateAxes on non-graph nodes, found {prefix}"
    if prefix is None or prefix is Carry:
        return None
    if isinstance(prefix, int):
        arrays = (jax.Array, np.ndarray)
        return None if output or isinstance(x, arrays) else f"Expected an array, got {type(x).__name__}"
    return f"Invalid axes {prefix}"


def check_fit(axes: tp.Any, tree: tp.Any, where: str, output: bool = False) -> None:
    """Raises where an axis of ``axes`` (a prefix of ``tree``) does not fit what it meets;
    ``where`` names ``tree`` in the message (``args``, or ``out`` and the path to it)."""
    try:
        prefixes = trees.broadcast_prefix(axes, tree, trees.is_node_leaf)
    except ValueError:
        return  # axes of another structure are refused later, as they are there
    leaves = jax.tree_util.tree_leaves_with_path(tree, is_leaf=trees.is_node_leaf)
    for (path, x), prefix in zip(leaves, prefixes):
        problem = _axis_problem(prefix, x, output)
        if problem is not None:
            sep = " at " if output else " "
            raise ValueError(f"{problem}{sep}{where}{jax.tree_util.keystr(path)}")
