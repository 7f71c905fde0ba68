"""A graph-mode call downgraded to tree mode: the places of its output that repeat a Variable.

Tree mode passes each place of the output on its own; the caller gets one object for
each Variable again by pointing every later place at the object built for the first.
"""

from __future__ import annotations

import typing as tp

import jax

from ._trees import is_variable


class Alias(tp.NamedTuple):
    """Two places of an output (positions among its leaves, Variables as leaves) that hold
    one Variable: the later place gets the object built for the first."""

    place: int
    first: int


def repeats(out: tp.Any) -> tuple[Alias, ...]:
    """The places of ``out`` that repeat a Variable held at an earlier place."""
    first: dict[int, int] = {}
    aliases = []
    for place, leaf in enumerate(jax.tree_util.tree_leaves(out, is_leaf=is_variable)):
        if is_variable(leaf) and first.setdefault(id(leaf), place) != place:
            aliases.append(Alias(place, first[id(leaf)]))
    return tuple(aliases)


def relink(out: tp.Any, aliases: tp.Sequence[Alias]) -> tp.Any:
    """``out`` with each alias's place holding the object at its first place."""
    leaves, treedef = jax.tree_util.tree_flatten(out, is_leaf=is_variable)
    for alias in aliases:
        leaves[alias.place] = leaves[alias.first]
    return jax.tree_util.tree_unflatten(treedef, leaves)
