"""Flattening nested mappings to ``{path_tuple: leaf}`` dicts and back."""

from __future__ import annotations

import dataclasses
import typing as tp

__all__ = ["empty_node", "flatten_mapping", "flatten_to_sequence", "unflatten_mapping"]

IsLeafCallable = tp.Callable[[tuple[tp.Any, ...], tp.Mapping[tp.Any, tp.Any]], bool]


@dataclasses.dataclass(frozen=True)
class _EmptyNode:
    """Marks an empty sub-mapping in a flat mapping made with ``keep_empty_nodes=True``: a
    field-less dataclass, as flax's (its repr ``_EmptyNode()``; every one equal to the others)."""


empty_node = _EmptyNode()


def _walk(
    xs: tp.Any, prefix: tuple[tp.Any, ...], is_leaf: IsLeafCallable | None, keep_empty_nodes: bool
) -> tp.Iterator[tuple[tuple[tp.Any, ...], tp.Any]]:
    """Yields ``(path, leaf)`` pairs of ``xs`` depth first, in the mappings' own order."""
    if not prefix and not isinstance(xs, tp.Mapping):
        raise TypeError(f"expected a Mapping to flatten; got {type(xs).__name__}")
    if not isinstance(xs, tp.Mapping) or (is_leaf is not None and is_leaf(prefix, xs)):
        yield prefix, xs
        return
    if not xs:
        if keep_empty_nodes and prefix:
            yield prefix, empty_node
        return
    for key, value in xs.items():
        yield from _walk(value, (*prefix, key), is_leaf, keep_empty_nodes)


def flatten_mapping(
    xs: tp.Mapping[tp.Any, tp.Any],
    /,
    *,
    keep_empty_nodes: bool = False,
    is_leaf: IsLeafCallable | None = None,
    sep: str | None = None,
) -> dict[tp.Any, tp.Any]:
    """A flat dict from key paths (tuples, or strings joined by ``sep``) to the leaves of ``xs``.

    Empty sub-mappings are dropped unless ``keep_empty_nodes``, which maps them to
    :data:`empty_node`; ``is_leaf(path, value)`` stops the descent into a sub-mapping.
    """
    pairs = _walk(xs, (), is_leaf, keep_empty_nodes)
    if sep is None:
        return dict(pairs)
    return {sep.join(path): value for path, value in pairs}


def flatten_to_sequence(
    xs: tp.Mapping[tp.Any, tp.Any], /, *, is_leaf: IsLeafCallable | None = None
) -> list[tuple[tp.Any, tp.Any]]:
    """The ``(path_tuple, leaf)`` pairs of ``xs``, as :func:`flatten_mapping` finds them."""
    return list(_walk(xs, (), is_leaf, keep_empty_nodes=False))


def unflatten_mapping(xs: tp.Any, /, *, sep: str | None = None) -> dict[tp.Any, tp.Any]:
    """The nested dict a flat mapping (or ``(path, value)`` pairs) describes; inverse of :func:`flatten_mapping`.

    With ``sep`` the keys are strings split on it; :data:`empty_node` values become ``{}``.
    """
    items = xs.items() if isinstance(xs, tp.Mapping) else xs
    result: dict[tp.Any, tp.Any] = {}
    for path, value in items:
        if sep is not None:
            path = tuple(path.split(sep))
        node = result
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = {} if value is empty_node else value
    return result
