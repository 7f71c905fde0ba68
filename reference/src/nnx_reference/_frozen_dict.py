"""``FrozenDict``: the immutable, hashable mapping flax keeps in static attributes
(``LinearGeneral.batch_axis``), with the name, equality and repr it shows there."""

from __future__ import annotations

import typing as tp

import jax

K = tp.TypeVar("K")
V = tp.TypeVar("V")


class FrozenDict(tp.Mapping[K, V]):
    """A read-only mapping: equal to any mapping with the same items, hashable when its
    values are, a pytree of its values in key order."""

    __slots__ = ("_dict", "_hash")

    def __init__(self, *args: tp.Any, **kwargs: tp.Any) -> None:
        self._dict: dict[K, V] = dict(*args, **kwargs)
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._dict[key]

    def __setitem__(self, key: K, value: V) -> None:
        raise ValueError("FrozenDict is immutable.")

    def __iter__(self) -> tp.Iterator[K]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._dict.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_pretty(self._dict, '')})"


def _pretty(mapping: tp.Mapping[tp.Any, tp.Any], indent: str) -> str:
    """A mapping one item a line, nested mappings indented, as flax prints a FrozenDict."""
    if not mapping:
        return "{}"
    inner = indent + "    "
    lines = [
        f"{inner}{key}: {_pretty(value, inner) if isinstance(value, tp.Mapping) else repr(value)},"
        for key, value in mapping.items()
    ]
    return "{\n" + "\n".join(lines) + f"\n{indent}}}"


def _flatten(frozen: FrozenDict[tp.Any, tp.Any]) -> tuple[list[tuple[tp.Any, tp.Any]], tuple[tp.Any, ...]]:
    keys = tuple(sorted(frozen))
    return [(jax.tree_util.DictKey(k), frozen[k]) for k in keys], keys


jax.tree_util.register_pytree_with_keys(FrozenDict, _flatten, lambda keys, values: FrozenDict(zip(keys, values)))
