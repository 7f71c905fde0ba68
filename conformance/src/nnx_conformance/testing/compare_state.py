"""Running one scenario on two implementations and comparing everything it leaves behind.

A scenario is a function ``scenario(nnx)`` that builds its objects with ``nnx``, calls
the API under test and returns what should agree: the results and the objects it was
given (so the state they are left in counts too). :func:`observe` runs it in one
implementation's context and records an :class:`Outcome`: the returned objects
described implementation-independently by :func:`describe` (types by name, arrays bit
for bit, shared references by first occurrence), the exception raised, and the
warnings emitted; ``assertions.assert_same`` compares the outcomes of the implementation
under test and of flax.nnx.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .differential import Side

Scenario = Callable[[Any], Any]

class WarningSeen(NamedTuple):
    """A warning a scenario emitted: its category's name and its message."""

    category: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What a scenario did on one implementation: its described result, or the error it raised."""

    result: Any
    error: BaseException | None
    warnings: tuple[WarningSeen, ...]


@dataclass(frozen=True)
class Described:
    """A description made earlier by :func:`describe` (a snapshot of objects that change
    later): described again, it stays as it is."""

    description: Any


def _array(value: Any) -> tuple[Any, ...]:
    if isinstance(value, jax.core.Tracer):
        return ("tracer", str(value.aval))
    if jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
        data = np.asarray(jax.random.key_data(value))
        return ("key", data.dtype.str, data.shape, data.tobytes())
    data = np.asarray(value)
    return ("array", data.dtype.str, data.shape, data.tobytes())


class _Describer:
    """Describes one returned value; objects seen before become ("ref", first index)."""

    def __init__(self, nnx: Any) -> None:
        self.nnx = nnx
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps described objects alive so ids stay unique

    def __call__(self, obj: Any) -> Any:
        nnx = self.nnx
        if isinstance(obj, (float, complex)) and obj != obj:  # NaN: described by repr, so equal to itself
            return (type(obj).__name__, repr(obj))
        if obj is None or isinstance(obj, (bool, int, float, str, complex)):
            return (type(obj).__name__, obj)
        if isinstance(obj, (jax.Array, np.ndarray, np.generic)):
            return _array(obj)
        if isinstance(obj, Described):
            return obj.description
        if id(obj) in self.seen:
            return ("ref", self.seen[id(obj)])
        self.seen[id(obj)] = len(self.seen)
        self.keep.append(obj)
        if isinstance(obj, jax.Ref):
            return ("Ref", _array(obj[...]))
        if isinstance(obj, nnx.Variable):
            metadata = sorted((str(k), self(v)) for k, v in obj.get_metadata().items())
            return ("Variable", type(obj).__name__, metadata, self(obj.get_raw_value()))
        if isinstance(obj, nnx.State):
            return ("State", type(obj).__name__, [(str(k), self(v)) for k, v in obj.items()])
        if isinstance(obj, nnx.GraphDef):
            return ("GraphDef",)
        if isinstance(obj, nnx.Pytree):
            return (type(obj).__name__, self._node_contents(obj))
        if isinstance(obj, Mapping):
            return (type(obj).__name__, [(str(k), self(v)) for k, v in obj.items()])
        if isinstance(obj, (list, tuple)):
            return (type(obj).__name__, [self(v) for v in obj])
        if isinstance(obj, type):
            return ("type", obj.__name__)
        if isinstance(obj, BaseException):
            return ("exception", type(obj).__name__)
        if dataclasses.is_dataclass(obj):
            return (type(obj).__name__, [(f.name, self(getattr(obj, f.name))) for f in dataclasses.fields(obj)])
        if callable(obj):
            return ("callable", getattr(obj, "__qualname__", type(obj).__name__))
        return ("object", type(obj).__name__)

    def _node_contents(self, node: Any) -> Any:
        if isinstance(node, Sequence):
            return [self(v) for v in node]
        if isinstance(node, Mapping):
            return [(str(k), self(v)) for k, v in node.items()]
        public = sorted((str(k), v) for k, v in vars(node).items() if not str(k).startswith("_"))
        return [(k, self(v)) for k, v in public]


def describe(nnx: Any, obj: Any) -> Any:
    """``obj`` as nested tuples of plain values: types by name, arrays as (dtype, shape, bytes),
    tracers as ("tracer", aval), Variables with their metadata, Modules by public attributes,
    and a second reference to an object as ("ref", index of its first occurrence)."""
    return _Describer(nnx)(obj)


def observe(side: Side, scenario: Scenario) -> Outcome:
    """Run ``scenario(side.nnx)`` in ``side``'s context, recording its result, error and warnings."""
    with side.context(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            returned = scenario(side.nnx)
            result, error = describe(side.nnx, returned), None
        except Exception as raised:  # noqa: BLE001 - the exception is part of the outcome
            result, error = None, raised
    seen = tuple(WarningSeen(w.category.__name__, str(w.message)) for w in caught)
    return Outcome(result, error, seen)


def first_difference(expected: Any, actual: Any, where: str = "result") -> str | None:
    """Where two descriptions first differ (yardstick first), or None."""
    if isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list)):
        if len(expected) != len(actual) or type(expected) is not type(actual):
            return f"{where}: expected {short(expected)}, got {short(actual)}"
        for index, (e, a) in enumerate(zip(expected, actual)):
            label = e[0] if isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], str) else index
            found = first_difference(e, a, f"{where}/{label}")
            if found:
                return found
        return None
    if isinstance(expected, bytes) and isinstance(actual, bytes):
        return None if expected == actual else f"{where}: array values differ"
    return None if expected == actual else f"{where}: expected {short(expected)}, got {short(actual)}"


def short(description: Any) -> str:
    text = repr(description)
    return text if len(text) <= 300 else text[:300] + "..."


def error_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}({lines[0][:200] if lines else ''!r})"


def class_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def deprecations(outcome: Outcome, names: Sequence[str]) -> list[str]:
    """The ``names`` that a DeprecationWarning (or subclass) of ``outcome`` mentions."""
    return [n for n in names if any("Deprecat" in w.category and n in w.message for w in outcome.warnings)]
