"""Prefix objects that assign a value (axis, sharding) to substates of a graph node."""

from __future__ import annotations

import abc
import typing as tp

from .. import filterlib, statelib, variablelib


class VariablePrefix(abc.ABC):
    """A prefix entry of a graph node that gives each of its Variables a value of its own
    (the value the aliasing check compares)."""

    @abc.abstractmethod
    def map_prefix(self, path: tuple, variable: variablelib.Variable[tp.Any]) -> tp.Any:
        """The value for ``variable`` at ``path`` below the node."""


def _pairs(spec: tp.Any) -> list[tuple[tp.Any, tp.Any]]:
    """(filter, value) pairs from a State of values, a Mapping, or an iterable of pairs."""
    if isinstance(spec, statelib.State):  # its leaves may be Variables holding the values
        return [
            (filterlib.PathIn(tuple(path)), leaf.get_value() if isinstance(leaf, variablelib.Variable) else leaf)
            for path, leaf in statelib.to_flat_state(spec)
        ]
    if isinstance(spec, tp.Mapping):
        return list(spec.items())
    return [tuple(pair) for pair in spec]


class PrefixMapping(VariablePrefix):
    """An ordered mapping from filters to prefix values for one graph node."""

    def __init__(self, filter_values: tp.Any, /):
        """``filter_values``: a State of values, a Mapping or an iterable of (filter, value)."""
        pairs = _pairs(filter_values)
        self._filters = tuple(f for f, _ in pairs)
        self._values = tuple(v for _, v in pairs)

    @property
    def filters(self) -> tuple:
        return self._filters

    def groups(self) -> list[tuple[tp.Any, tp.Any]]:
        """``[(filter, value)]`` in order."""
        return list(zip(self._filters, self._values))

    def map_prefix(self, path: tuple, variable: tp.Any) -> tp.Any:
        """The value of the first filter that selects ``variable`` at ``path``."""
        for flt, value in zip(self._filters, self._values):
            if filterlib.to_predicate(flt)(path, variable):
                return value
        raise self._missing(path, variable)

    def _missing(self, path: tuple, variable: tp.Any) -> Exception:
        return ValueError(f"No filter of {self!r} selects the state at {path=}, {variable=}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(zip(self._filters, self._values))!r})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and self._filters == other._filters  # type: ignore[attr-defined]
            and self._values == other._values  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:  # as flax's: the kind is left out, so a StateAxes and a StateSharding may collide
        return hash((self._filters, self._values))
