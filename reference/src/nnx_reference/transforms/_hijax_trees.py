"""Trees handed to JAX transforms hold no hijax Variables: those travel as pytrees of their
value, as the other Variables do, and become hijax Variables again on the way out."""

from __future__ import annotations

import typing as tp

import jax

from .. import _hijax
from ._trees import is_variable

_T = tp.TypeVar("_T")


def _map_variables(fn: tp.Callable[[tp.Any], tp.Any], tree: _T) -> _T:
    """``tree`` with ``fn`` applied to each of its Variables; ``tree`` itself while no hijax
    Variable was ever built (then there is nothing to convert)."""
    if not _hijax.any_twin():
        return tree
    return jax.tree_util.tree_map(lambda x: fn(x) if is_variable(x) else x, tree, is_leaf=is_variable)  # type: ignore[no-any-return]


def to_jax(tree: _T) -> _T:
    """``tree`` with its hijax Variables as pytrees, as JAX gets the other Variables."""
    return _map_variables(_hijax.lowered, tree)


def from_jax(tree: _T) -> _T:
    """``tree`` with the pytree Variables that :func:`to_jax` made hijax Variables again."""
    return _map_variables(_hijax.raised, tree)
