"""Filters: a small language for selecting (path, value) pairs of a graph's state.

A *predicate* is any callable ``(path, value) -> bool``. A *filter* is a predicate
or one of the literals that :func:`to_predicate` turns into one:

* ``...`` or ``True`` -> :class:`Everything`; ``None`` or ``False`` -> :class:`Nothing`
* a type -> :class:`OfType` (matches instances, subclasses included)
* a string -> :class:`WithTag` (matches values whose ``tag`` attribute equals it)
* a list or tuple of filters -> :class:`Any` of them
* any other callable is used as it is.

The predicates are small frozen objects with value equality and a hash, so that
filters can be used as dictionary keys (e.g. in ``StateAxes``) and in caches.
"""

from __future__ import annotations

import dataclasses
import typing as tp
from collections.abc import Hashable

from .variablelib import Variable

__all__ = [
    "All",
    "Any",
    "Everything",
    "Not",
    "Nothing",
    "OfType",
    "PathContains",
    "WithTag",
]

Key = Hashable
PathParts = tuple[Key, ...]
Predicate = tp.Callable[[PathParts, tp.Any], bool]
FilterLiteral = type | str | Predicate | bool | tp.Any | None
Filter = tp.Union[FilterLiteral, tuple["Filter", ...], list["Filter"]]  # noqa: UP007 - recursive: "Filter" is a forward reference

_NO_TAG = object()


def to_predicate(filter: Filter) -> Predicate:
    """Turns a filter (a literal or a predicate) into a predicate ``(path, value) -> bool``."""
    if filter is ... or filter is True:
        return Everything()
    if filter is None or filter is False:
        return Nothing()
    if isinstance(filter, type):
        return OfType(filter)
    if isinstance(filter, str):
        return WithTag(filter)
    if isinstance(filter, (list, tuple)):
        return Any(*filter)
    if callable(filter):
        return filter
    raise TypeError(
        f"Invalid filter {filter!r} of type {type(filter).__name__}: expected a type, "
        "a string tag, a predicate (path, value) -> bool, ..., True, False, None, "
        "or a list/tuple of filters"
    )


def filters_to_predicates(filters: tp.Sequence[Filter]) -> tuple[Predicate, ...]:
    """Converts a sequence of filters; a catch-all (``...``/``True``) may only be followed
    by other catch-alls (a later filter would be left nothing to match): ValueError."""
    is_catch_all = [f is ... or f is True for f in filters]
    if True in is_catch_all:
        first = is_catch_all.index(True)
        if not all(is_catch_all[first:]):
            raise ValueError(
                f"`...` or `True` can only be used as the last filters, got {filters[first]!r} at index {first} "
                f"of {tuple(filters)!r}."
            )
    return tuple(to_predicate(filter) for filter in filters)


@dataclasses.dataclass(frozen=True, slots=True)
class WithTag:
    """Matches values that have a ``tag`` attribute equal to ``tag`` (e.g. RngKey/RngCount)."""

    tag: str

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        if isinstance(x, Variable):  # read the metadata directly: a miss stays cheap
            return x.get_metadata("tag", _NO_TAG) == self.tag
        return getattr(x, "tag", _NO_TAG) == self.tag

    def __repr__(self) -> str:
        return f"WithTag({self.tag!r})"


@dataclasses.dataclass(frozen=True)
class PathContains:
    """Matches values whose path contains ``key``.

    With ``exact=False`` it matches when ``str(key)`` is a substring of any path
    element's ``str``.
    """

    key: Key | str
    exact: bool = True

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        if self.exact:
            return self.key in path
        needle = str(self.key)
        return any(needle in str(part) for part in path)

    def __repr__(self) -> str:
        return f"PathContains({self.key!r}, exact={self.exact})"


class PathIn:
    """Matches values whose full path is one of ``paths``."""

    __slots__ = ("paths",)

    def __init__(self, *paths: PathParts):
        self.paths = frozenset(paths)

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return path in self.paths

    def __repr__(self) -> str:
        ordered = sorted(self.paths, key=lambda p: tuple(map(str, p)))
        return f"PathIn({','.join(map(repr, ordered))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathIn) and self.paths == other.paths

    def __hash__(self) -> int:
        return hash((PathIn, self.paths))


@dataclasses.dataclass(frozen=True, slots=True)
class OfType:
    """Matches values that are instances of ``type`` (subclasses included)."""

    type: type

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return isinstance(x, self.type)

    def __repr__(self) -> str:
        return f"OfType({self.type!r})"


class Any:
    """Matches values that match at least one of ``filters``."""

    __slots__ = ("predicates",)

    def __init__(self, *filters: Filter):
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return any(predicate(path, x) for predicate in self.predicates)

    def __repr__(self) -> str:
        return f"Any({', '.join(map(repr, self.predicates))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Any) and self.predicates == other.predicates

    def __hash__(self) -> int:
        return hash((Any, self.predicates))


class All:
    """Matches values that match every one of ``filters``."""

    __slots__ = ("predicates",)

    def __init__(self, *filters: Filter):
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return all(predicate(path, x) for predicate in self.predicates)

    def __repr__(self) -> str:
        return f"All({', '.join(map(repr, self.predicates))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, All) and self.predicates == other.predicates

    def __hash__(self) -> int:
        return hash((All, self.predicates))


class Not:
    """Matches values that do not match ``collection_filter``."""

    __slots__ = ("predicate",)

    def __init__(self, collection_filter: Filter, /):
        self.predicate = to_predicate(collection_filter)

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return not self.predicate(path, x)

    def __repr__(self) -> str:
        return f"Not({self.predicate!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Not) and self.predicate == other.predicate

    def __hash__(self) -> int:
        return hash((Not, self.predicate))


class Everything:
    """Matches every value (the literal forms are ``...`` and ``True``)."""

    __slots__ = ()

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return True

    def __repr__(self) -> str:
        return "Everything()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Everything)

    def __hash__(self) -> int:
        return hash(Everything)


class Nothing:
    """Matches no value (the literal forms are ``None`` and ``False``)."""

    __slots__ = ()

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return False

    def __repr__(self) -> str:
        return "Nothing()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Nothing)

    def __hash__(self) -> int:
        return hash(Nothing)
