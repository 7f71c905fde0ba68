"""The suite's one way to say what a value is and where two such accounts differ.

:func:`describe` turns what a run returns (arrays, Variables, States, Modules, containers)
into nested tuples of plain values that two implementations can be compared on: types by
name, arrays bit for bit (:class:`ArrayEntry`), shared references by first occurrence.
:func:`difference` is the one comparison of such accounts, whatever made them: two
implementations' outcomes (``assertions.assert_same``), two layers' states and outputs
(``layer_cases``), or two snapshots of one graph (``snapshots``).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class ArrayEntry(NamedTuple):
    """An array described bit for bit: ``kind`` is "array", "key" (a PRNG key array, by its
    key data) or "tracer" (by its abstract value, with no dtype, shape or data)."""

    kind: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes

    def values(self) -> np.ndarray:
        """The described array, back as NumPy."""
        return np.frombuffer(self.data, dtype=jnp.dtype(self.dtype)).reshape(self.shape)


def array_entry(value: Any) -> ArrayEntry:
    """How :func:`describe` records an array, a PRNG key array or a tracer."""
    if isinstance(value, jax.core.Tracer):
        return ArrayEntry("tracer", str(value.aval), (), b"")
    kind = "array"
    if jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
        kind, value = "key", jax.random.key_data(value)
    data = np.asarray(value)
    return ArrayEntry(kind, data.dtype.name, data.shape, data.tobytes())


@dataclass(frozen=True)
class Described:
    """A description made earlier by :func:`describe` (a snapshot of objects that change
    later): described again, it stays as it is."""

    description: Any


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
        if obj is None or isinstance(obj, (bool, int, float, str, complex, bytes)):
            return (type(obj).__name__, obj)
        if isinstance(obj, (jax.Array, np.ndarray, np.generic)):
            return array_entry(obj)
        if isinstance(obj, Described):
            return obj.description
        if id(obj) in self.seen:
            return ("ref", self.seen[id(obj)])
        self.seen[id(obj)] = len(self.seen)
        self.keep.append(obj)
        if isinstance(obj, jax.Ref):
            return ("Ref", array_entry(obj[...]))
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
    """``obj`` as nested tuples of plain values: types by name, arrays as :class:`ArrayEntry`,
    Variables with their metadata, Modules by public attributes, and a second reference to
    an object as ("ref", index of its first occurrence)."""
    return _Describer(nnx)(obj)


Allowance = Callable[[np.ndarray], float]
"""How far an array may be from the expected one (given), in max abs difference."""


def exactly(expected: np.ndarray) -> float:
    """The default allowance: none, arrays compare bit for bit."""
    return 0.0


def difference(
    expected: Any, actual: Any, where: str = "", *, allow: Allowance = exactly, limit: int = 1
) -> str | None:
    """Where two descriptions differ (the expected one first), as up to ``limit`` sentences,
    or None when they are equal: mappings key by key, sequences item by item, arrays bit for
    bit (or within ``allow``), texts of several lines line by line (a diff), anything else by ``==``."""
    found = list(_differences(expected, actual, where, allow))
    if not found:
        return None
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def _differences(expected: Any, actual: Any, where: str, allow: Allowance) -> Iterator[str]:
    if isinstance(expected, ArrayEntry) and isinstance(actual, ArrayEntry):
        found = _array_difference(expected, actual, allow)
        if found:
            yield _at(where, found)
    elif isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in sorted(set(expected) | set(actual), key=repr):
            if key not in expected or key not in actual:
                want, got = expected.get(key, "nothing"), actual.get(key, "nothing")
                yield _at(f"{where}{key!r}", f"expected {short(want)}, got {short(got)}")
            else:
                yield from _differences(expected[key], actual[key], f"{where}{key!r}", allow)
    elif isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list)):
        if len(expected) != len(actual) or type(expected) is not type(actual):
            yield _at(where, f"expected {short(expected)}, got {short(actual)}")
            return
        labels = getattr(expected, "_fields", None) or [_label(e, i) for i, e in enumerate(expected)]
        for label, e, a in zip(labels, expected, actual):
            yield from _differences(e, a, f"{where}/{label}", allow)
    elif isinstance(expected, str) and isinstance(actual, str) and "\n" in expected + actual:
        if expected != actual:
            yield _at(where, "lines differ (- expected, + got):\n" + _text_difference(expected, actual))
    elif not _equal(expected, actual):
        yield _at(where, f"expected {short(expected)}, got {short(actual)}")


def _at(where: str, what: str) -> str:
    return f"{where}: {what}" if where else what


def _text_difference(expected: str, actual: str) -> str:
    """A unified diff of two texts, one line of context, at most 40 lines."""
    lines = difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "got", lineterm="", n=1)
    return "\n".join(list(lines)[:40])


def _label(item: Any, index: int) -> Any:
    """A described item's label in a path: the name of a (name, value) pair, else its index."""
    return item[0] if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) else index


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        return isinstance(expected, np.ndarray) and isinstance(actual, np.ndarray) and _array_equal(expected, actual)
    return bool(expected == actual)


def _array_equal(expected: np.ndarray, actual: np.ndarray) -> bool:
    return expected.dtype == actual.dtype and expected.shape == actual.shape and np.array_equal(expected, actual)


def _array_difference(expected: ArrayEntry, actual: ArrayEntry, allow: Allowance) -> str | None:
    """What differs between two described arrays beyond the allowance, or None. The same
    bits always agree (float0 gradients, which hold no bytes, included)."""
    if expected[:3] != actual[:3]:
        return f"expected {_kind(expected)}, got {_kind(actual)}"
    if expected.data == actual.data:
        return None
    e, a = expected.values(), actual.values()
    diff, allowed = _max_abs_diff(e, a), allow(e)
    if allowed == 0.0:
        return f"{_kind(expected)}: values differ, max abs diff {diff:.3g}"
    if not diff <= allowed:  # NaN included
        return f"{_kind(expected)}: max abs diff {diff:.3g} > {allowed:.3g}"
    return None


def _kind(entry: ArrayEntry) -> str:
    if entry.kind == "tracer":
        return f"a tracer of {entry.dtype}"
    return f"{'a key array of ' if entry.kind == 'key' else ''}{entry.dtype}{list(entry.shape)}"


def _max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """In NumPy, not JAX: every new shape would compile a JAX computation."""
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def short(description: Any) -> str:
    """A description's repr, cut to 300 characters."""
    text = repr(description)
    return text if len(text) <= 300 else text[:300] + "..."
