"""The checks ``scan`` makes of the carry a body returns against the carry it was given.

With graph updates the carry must come back as the same references (graph nodes and
Variables the very objects given, arrays in the same structure), and a carried graph
node's state must keep its structure (no Variable added or removed), as ``jax.lax.scan``
requires. Without graph updates the carry given, as it was before the body ran, must be a
prefix of the carry returned.
"""

from __future__ import annotations

import typing as tp

import jax

from .. import graphlib
from ._trees import is_variable
from .iteration import Carry


class CarryOut(tp.NamedTuple):
    """The carry a body returned: ``index`` is ``-1`` for the whole output, its position in a
    tuple output, or ``None`` where flax reads the carry as ``None``."""

    index: int | None
    value: tp.Any


def carry_out(out: tp.Any, out_axes: tp.Any, same_length: bool) -> CarryOut | None:
    """The carry ``out`` holds, found as flax finds it (``None`` where ``out_axes`` has no Carry):
    the whole output where ``out_axes`` is Carry; where a tuple or list ``out_axes`` has Carry
    at position ``i``, item ``i`` of a tuple output (``IndexError`` past its end) beside a tuple
    ``out_axes`` and ``None`` beside any other output, so that the carry check fails on it, and
    the whole output beside a list ``out_axes``. In graph
    mode without graph updates (``same_length``) flax finds it only in an output of
    ``out_axes``' type and length (an ``IndexError`` past its end all the same), refuses a
    list ``out_axes``, and leaves any other output to the ``out_axes`` prefix error."""
    if out_axes is Carry:
        return CarryOut(-1, out)
    if type(out_axes) not in (tuple, list):
        return None
    index = next((i for i, p in enumerate(out_axes) if p is Carry), None)
    if index is None:
        return None
    if same_length:
        if type(out_axes) is list:  # flax maps it over a carry it finds none of: JAX's prefix error
            jax.tree_util.tree_map(lambda *_: None, out_axes, None)
        if type(out) is not type(out_axes):
            return None
        carry = out[index]  # past the output's end an IndexError, as flax's
        return CarryOut(index, carry) if len(out) == len(out_axes) else None
    if type(out_axes) is list:
        return CarryOut(-1, out)
    if type(out) is tuple:
        return CarryOut(index, out[index])
    return CarryOut(None, None)


def carry_snapshot(carry_in: tp.Any) -> tp.Any:
    """The carry given as it is before the body runs, Variables as leaves (so that a Module
    the body changes, swapping its Variables, is seen as it was)."""
    leaves, treedef = jax.tree_util.tree_flatten(carry_in, is_leaf=is_variable)
    return jax.tree_util.tree_unflatten(treedef, leaves)


def check_carry_prefix(snapshot: tp.Any, out: tp.Any, out_axes: tp.Any, same_length: bool) -> None:
    """Without graph updates flax maps the carry it gave over the carry returned first, so a
    returned carry lacking the given one's structure (:func:`carry_snapshot`) as a prefix gets
    JAX's prefix ValueError (a deeper one reaches ``jax.lax.scan``, whose TypeError names both
    structures)."""
    found = carry_out(out, out_axes, same_length)
    if found is not None:
        jax.tree_util.tree_map(lambda *_: None, snapshot, found.value, is_leaf=is_variable)


def _is_reference(x: tp.Any) -> bool:
    return is_variable(x) or graphlib.is_graph_node(x)


def check_same_references(carry_in: tp.Any, out: tp.Any, out_axes: tp.Any) -> None:
    """With graph updates: the carry returned has the given carry's structure, and holds its
    graph nodes and Variables themselves, else ValueError (JAX's prefix error where the given
    carry's structure is no prefix of the returned one's, as flax maps the one over the other)."""
    found = carry_out(out, out_axes, same_length=False)
    if found is None:
        return
    jax.tree_util.tree_map(lambda *_: None, carry_in, found.value, is_leaf=_is_reference)
    in_leaves, in_def = jax.tree_util.tree_flatten_with_path(carry_in, is_leaf=_is_reference)
    out_leaves, out_def = jax.tree_util.tree_flatten(found.value, is_leaf=_is_reference)
    if in_def != out_def:
        raise ValueError(
            "Carry references must be the same between iterations. Got a carry of structure "
            f"{out_def} for one of structure {in_def}"
        )
    for (path, given), returned in zip(in_leaves, out_leaves):
        if _is_reference(given) and returned is not given:
            raise ValueError(
                "Carry references must be the same between iterations. Got "
                f"{type(returned).__name__} for the {type(given).__name__} given at carry path "
                f"{jax.tree_util.keystr(path)!r}"
            )


def _leaf_paths(state: tp.Any) -> set[str]:
    leaves = jax.tree_util.tree_flatten_with_path(state, is_leaf=is_variable)[0]
    return {jax.tree_util.keystr(path) for path, _ in leaves}


def check_carried_state(state_in: tp.Any, state_out: tp.Any) -> None:
    """The state of a carried graph node keeps its structure across the body, else TypeError
    (as ``jax.lax.scan``'s) naming the paths added or removed."""
    structure_in = jax.tree_util.tree_structure(state_in, is_leaf=is_variable)
    if structure_in != jax.tree_util.tree_structure(state_out, is_leaf=is_variable):
        differing = sorted(_leaf_paths(state_in) ^ _leaf_paths(state_out))
        raise TypeError(
            "scan body function carry input and carry output must have the same pytree "
            "structure, but they differ: the state of a carried graph node changed at "
            f"{', '.join(differing)}"
        )
