"""State: the nested mapping of a graph's Variables (and arrays), and its flat form.

A :class:`State` wraps a nested ``dict`` (``raw_mapping``) whose leaves are Variables
or arrays; reading a nested entry returns a State view over the same inner dict. It
is a JAX pytree with sorted keys (``DictKey``), so ``jax.tree.map`` works on it.
A :class:`FlatState` is the same content as a sorted sequence of ``(path, leaf)``.
"""

from __future__ import annotations

import typing as tp
import warnings
from collections.abc import MutableMapping

import jax

from . import reprlib
from .filterlib import filters_to_predicates
from .variablelib import Variable

__all__ = [
    "FlatState",
    "State",
    "filter_state",
    "from_flat_state",
    "map_state",
    "merge_state",
    "replace_by_pure_dict",
    "restore_int_paths",
    "split_state",
    "to_flat_state",
    "to_pure_dict",
]

Key = tp.Hashable
PathParts = tuple[Key, ...]


def _sort_key(key: tp.Any) -> tuple[bool, str, tp.Any]:
    return (isinstance(key, str), type(key).__name__, key)


def _path_sort_key(path: PathParts) -> tuple[tuple[bool, str, tp.Any], ...]:
    return tuple(_sort_key(k) for k in path)


def sort_paths(paths: tp.Iterable[PathParts]) -> list[PathParts]:
    """Paths in the order State leaves are flattened (integer keys before strings)."""
    return sorted(paths, key=_path_sort_key)


def split_flat(
    items: tp.Iterable[tuple[PathParts, tp.Any]],
    filters: tp.Sequence[tp.Any],
    exhaustive: bool,
    nested: bool = False,
) -> list[list[tuple[PathParts, tp.Any]]]:
    """Distributes ``(path, leaf)`` pairs over ``filters``, each pair to the first that matches.

    With ``exhaustive``, a pair no filter matches raises ``ValueError``; without, it is dropped.
    """
    predicates = filters_to_predicates(filters)
    groups: list[list[tuple[PathParts, tp.Any]]] = [[] for _ in predicates]
    remainder = []
    for path, value in items:
        for group, predicate in zip(groups, predicates):
            if predicate(path, value):
                group.append((path, value))
                break
        else:
            remainder.append((path, value))
    if exhaustive and remainder:
        shown = from_flat_state(remainder) if nested else FlatState(remainder)
        raise ValueError(
            f"Non-exhaustive filters, got a non-empty remainder: {shown!r}.\nUse `...` to match all remaining elements."
        )
    return groups


class FlatState(tp.Sequence[tuple[PathParts, tp.Any]]):
    """A State as a sequence of ``(path, leaf)`` pairs sorted by path."""

    def __init__(self, items: tp.Iterable[tuple[PathParts, tp.Any]], /, *, sort: bool = True) -> None:
        pairs = list(items)
        if sort:
            pairs.sort(key=lambda pair: _path_sort_key(pair[0]))
        self._keys = tuple(tuple(p) for p, _ in pairs)
        self._values = [v for _, v in pairs]

    @classmethod
    def from_sorted_keys_values(cls, keys: tp.Iterable[PathParts], values: tp.Iterable[tp.Any]) -> FlatState:
        """A FlatState from paths already in order and their leaves."""
        return cls(zip(keys, values), sort=False)

    @property
    def paths(self) -> tuple[PathParts, ...]:
        return self._keys

    @property
    def leaves(self) -> list[tp.Any]:
        return self._values

    def __getitem__(self, index: tp.Any) -> tp.Any:
        if isinstance(index, slice):
            return FlatState(zip(self._keys[index], self._values[index]), sort=False)
        return (self._keys[index], self._values[index])

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> tp.Iterator[tuple[PathParts, tp.Any]]:
        return iter(zip(self._keys, self._values))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FlatState)
            and self._keys == other._keys
            and all(a is b for a, b in zip(self._values, other._values))
        )

    __hash__ = None  # type: ignore[assignment]

    def filter(self, first: tp.Any, /, *filters: tp.Any) -> FlatState | tuple[FlatState, ...]:
        groups = [FlatState(g, sort=False) for g in split_flat(self, (first, *filters), False)]
        return groups[0] if not filters else tuple(groups)

    def split(self, first: tp.Any, /, *filters: tp.Any) -> FlatState | tuple[FlatState, ...]:
        groups = [FlatState(g, sort=False) for g in split_flat(self, (first, *filters), True)]
        return groups[0] if not filters else tuple(groups)

    @staticmethod
    def merge(flat_state: FlatState, /, *flat_states: FlatState) -> FlatState:
        if not flat_states:  # one flat state is itself, as flax's (a sequence of pairs is sorted)
            return flat_state if isinstance(flat_state, FlatState) else FlatState(flat_state)
        merged: dict[PathParts, tp.Any] = {}
        for fs in (flat_state, *flat_states):
            merged.update(fs)
        return FlatState(merged.items())

    def to_nested_state(self) -> State:
        return from_flat_state(self)

    def __repr__(self) -> str:
        if not self._keys:
            return "FlatState([])"
        lines = [f"  ({p!r}, {reprlib.indent_tail(repr(v), '  ')})," for p, v in self]
        lines[-1] = lines[-1][:-1]
        return "\n".join(["FlatState([", *lines, "])"])


jax.tree_util.register_pytree_node(
    FlatState,
    lambda fs: (fs.leaves, fs.paths),
    lambda paths, leaves: FlatState.from_sorted_keys_values(paths, leaves),
)


def _raw(value: tp.Any) -> tp.Any:
    """Turns nested States into plain nested dicts (leaves untouched)."""
    if isinstance(value, State):
        return {k: _raw(v) for k, v in value._mapping.items()}
    if type(value) is dict:
        return {k: _raw(v) for k, v in value.items()}
    return value


class State(MutableMapping[Key, tp.Any]):
    """A nested mapping from attribute names (or indices) to Variables / arrays."""

    _mapping: dict[Key, tp.Any]

    def __init__(
        self, mapping: tp.Mapping[Key, tp.Any] | tp.Iterable[tuple[Key, tp.Any]] = (), /, *, _copy: bool = True
    ) -> None:
        if _copy or not isinstance(mapping, dict):
            mapping = {k: _raw(v) for k, v in dict(mapping).items()}
        object.__setattr__(self, "_mapping", mapping)

    @property
    def raw_mapping(self) -> dict[Key, tp.Any]:
        """The nested plain ``dict`` this State wraps."""
        return self._mapping

    def __getitem__(self, key: Key) -> tp.Any:
        value = self._mapping[key]
        return type(self)(value, _copy=False) if type(value) is dict else value

    def __setitem__(self, key: Key, value: tp.Any) -> None:
        self._mapping[key] = _raw(value)

    def __delitem__(self, key: Key) -> None:
        del self._mapping[key]

    def __iter__(self) -> tp.Iterator[Key]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __getattr__(self, name: str) -> tp.Any:
        if name.startswith("__") or name not in self.__dict__.get("_mapping", {}):
            raise AttributeError(f"No attribute '{name}' in {type(self).__name__}")
        return self[name]

    def __setattr__(self, name: str, value: tp.Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self[name] = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tp.Mapping):
            return NotImplemented
        return to_flat_state(self) == to_flat_state(other if isinstance(other, State) else State(other))

    __hash__ = None  # type: ignore[assignment]

    def __nnx_repr__(self, summarize: bool = False) -> str:
        """``State({...})``, one line per key; inside a Pytree's repr leaves are summarised."""
        return f"{type(self).__name__}({_nested_repr(self._mapping, summarize)})"

    def __repr__(self) -> str:
        return self.__nnx_repr__()

    def __treescope_repr__(self, path: str | None, subtree_renderer: tp.Callable[..., tp.Any]) -> tp.Any:
        """treescope shows a State as ``State({...})``, its nested States as plain dicts."""
        from treescope import repr_lib

        return repr_lib.render_dictionary_wrapper(
            object_type=type(self), wrapped_dict=self._mapping, path=path, subtree_renderer=subtree_renderer
        )

    def __or__(self, other: tp.Mapping[Key, tp.Any]) -> State:
        """``merge_state(self, other)``: later entries win."""
        if not other:  # nothing to merge: the State itself, as flax's
            return self
        return merge_state(self, other)

    def __sub__(self, other: tp.Mapping[Key, tp.Any]) -> State:
        """The entries of ``self`` whose paths ``other`` lacks (deprecated)."""
        _warn_deprecated("diff")
        if not other:
            return self
        taken = {path for path, _ in to_flat_state(other if isinstance(other, State) else State(other))}
        return from_flat_state(
            [(path, leaf) for path, leaf in to_flat_state(self) if path not in taken], cls=type(self)
        )

    def flat_state(self) -> FlatState:
        """The ``(path, leaf)`` pairs of this State, sorted by path (deprecated)."""
        _warn_deprecated("to_flat_state")
        return FlatState(_iter_flat(self._mapping, ()))

    @classmethod
    def from_flat_path(cls, flat_state: tp.Any, /) -> State:
        """Builds a nested State from ``(path, leaf)`` pairs (deprecated)."""
        _warn_deprecated("from_flat_state")
        return from_flat_state(flat_state, cls=cls)

    def to_pure_dict(self, extract_fn: tp.Callable[[tp.Any], tp.Any] | None = None) -> dict[Key, tp.Any]:
        _warn_deprecated("to_pure_dict")
        return to_pure_dict(self, extract_fn)

    def replace_by_pure_dict(self, pure_dict: dict[Key, tp.Any], replace_fn: tp.Any = None) -> None:
        _warn_deprecated("replace_by_pure_dict")
        replace_by_pure_dict(self, pure_dict, replace_fn)

    def map(self, f: tp.Callable[[PathParts, tp.Any], tp.Any]) -> State:
        _warn_deprecated("map_state")
        return map_state(f, self)

    def filter(self, first: tp.Any, /, *filters: tp.Any) -> State | tuple[State, ...]:
        _warn_deprecated("filter_state")
        return filter_state(self, first, *filters)

    def split(self, first: tp.Any, /, *filters: tp.Any) -> State | tuple[State, ...]:
        _warn_deprecated("split_state")
        return split_state(self, first, *filters)

    @staticmethod
    def merge(state: tp.Mapping[Key, tp.Any], /, *states: tp.Mapping[Key, tp.Any]) -> State:
        _warn_deprecated("merge_state")
        return merge_state(state, *states)


def _warn_deprecated(equivalent: str) -> None:
    """flax's DeprecationWarning for a State method with a function ``nnx.<equivalent>``."""
    warnings.warn(
        "`flax.nnx.State` will be deprecated and be replaced by the built-in Python dict. "
        f"Please use the equivalent `nnx.{equivalent}` instead.",
        DeprecationWarning,
        stacklevel=2,
    )


def _nested_repr(value: tp.Any, summarize: bool) -> str:
    if type(value) is dict:
        return reprlib.mapping_repr(value, lambda item: _nested_repr(item, summarize))
    if summarize and hasattr(value, "__nnx_repr__"):
        return value.__nnx_repr__(summarize=True)
    return repr(value)


def _iter_flat(mapping: tp.Mapping[Key, tp.Any], prefix: PathParts) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    for key, value in mapping.items():
        if type(value) is dict or isinstance(value, State):
            inner = value._mapping if isinstance(value, State) else value
            if inner:
                yield from _iter_flat(inner, (*prefix, key))
        else:
            yield (*prefix, key), value


def _state_flatten_with_keys(state: State) -> tuple[list[tuple[tp.Any, tp.Any]], tuple[Key, ...]]:
    keys = sorted(state._mapping, key=_sort_key)
    return [(jax.tree_util.DictKey(k), state._mapping[k]) for k in keys], tuple(keys)


def _state_unflatten(cls: type[State], keys: tuple[Key, ...], children: tp.Iterable[tp.Any]) -> State:
    return cls(dict(zip(keys, children)), _copy=False)


def register_state_type(cls: type[State]) -> None:
    """Registers a State subclass as a JAX pytree (sorted keys, ``DictKey`` paths)."""
    jax.tree_util.register_pytree_with_keys(
        cls,
        _state_flatten_with_keys,
        lambda keys, children: _state_unflatten(cls, keys, children),
        lambda s: ([s._mapping[k] for k in _state_flatten_with_keys(s)[1]], _state_flatten_with_keys(s)[1]),
    )


register_state_type(State)


def iter_flat_state(state: tp.Mapping[Key, tp.Any]) -> tp.Iterator[tuple[PathParts, tp.Any]]:
    """The ``(path, leaf)`` pairs of ``state`` in its own (insertion) order, unsorted."""
    return _iter_flat(state if isinstance(state, State) else _raw(dict(state)), ())


def to_flat_state(state: tp.Mapping[Key, tp.Any]) -> FlatState:
    """The ``(path, leaf)`` pairs of ``state``, sorted by path."""
    return FlatState(iter_flat_state(state))


def from_flat_state(
    flat_state: tp.Mapping[PathParts, tp.Any] | tp.Iterable[tuple[PathParts, tp.Any]], *, cls: type[State] = State
) -> State:
    """Builds a nested State from ``(path, leaf)`` pairs (or a mapping path -> leaf), in their order."""
    items = flat_state.items() if isinstance(flat_state, tp.Mapping) else flat_state
    root: dict[Key, tp.Any] = {}
    for path, value in items:
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return cls(root, _copy=False)


def merge_state(state: tp.Mapping[Key, tp.Any], /, *states: tp.Mapping[Key, tp.Any], cls: type[State] = State) -> State:
    """One State with the leaves of all ``states`` (later ones win on equal paths); one state
    alone is itself where it is a ``cls``, else a ``cls`` of it."""
    if not states:
        return state if isinstance(state, cls) else cls(state)
    merged: dict[PathParts, tp.Any] = {}
    for s in (state, *states):
        merged.update(to_flat_state(s))
    return from_flat_state(merged, cls=cls)


def split_state(state: State, first: tp.Any, /, *filters: tp.Any) -> State | tuple[State, ...]:
    """Partitions ``state`` by filters; every leaf must match one (use ``...`` last)."""
    groups = split_flat(to_flat_state(state), (first, *filters), exhaustive=True, nested=True)
    states = tuple(from_flat_state(g, cls=type(state)) for g in groups)
    return states[0] if not filters else states


def filter_state(state: State, first: tp.Any, /, *filters: tp.Any) -> State | tuple[State, ...]:
    """The leaves of ``state`` that match each filter (unmatched leaves are dropped)."""
    groups = split_flat(to_flat_state(state), (first, *filters), exhaustive=False)
    states = tuple(from_flat_state(g, cls=type(state)) for g in groups)
    return states[0] if not filters else states


def map_state(f: tp.Callable[[PathParts, tp.Any], tp.Any], state: State) -> State:
    """A State with ``f(path, leaf)`` in place of every leaf."""
    return from_flat_state([(p, f(p, v)) for p, v in to_flat_state(state)], cls=type(state))


def to_pure_dict(
    state: tp.Mapping[Key, tp.Any], extract_fn: tp.Callable[[tp.Any], tp.Any] | None = None
) -> dict[Key, tp.Any]:
    """A nested plain dict with each Variable replaced by its value (or ``extract_fn(leaf)``)."""

    def extract(leaf: tp.Any) -> tp.Any:
        if extract_fn is not None:
            return extract_fn(leaf)
        return leaf.get_value() if isinstance(leaf, Variable) else leaf

    return from_flat_state([(p, extract(v)) for p, v in to_flat_state(state)]).raw_mapping


def restore_int_paths(pure_dict: dict[Key, tp.Any]) -> dict[Key, tp.Any]:
    """Turns digit-string keys (as checkpoints store list indices) back into ints."""

    def fix(key: Key) -> Key:
        return int(key) if isinstance(key, str) and key.isdigit() else key

    return {fix(k): restore_int_paths(v) if isinstance(v, dict) else v for k, v in pure_dict.items()}


def replace_by_pure_dict(state: State, pure_dict: dict[Key, tp.Any], replace_fn: tp.Any = None) -> None:
    """Replaces ``state``'s leaf values in place with the values of a nested pure dict."""

    def replace(leaf: tp.Any, value: tp.Any) -> tp.Any:
        if replace_fn is not None:
            return replace_fn(leaf, value)
        return leaf.replace(value) if isinstance(leaf, Variable) else value

    current = dict(to_flat_state(state))
    for path, value in to_flat_state(restore_int_paths(pure_dict)):
        if path not in current:
            raise ValueError(f"key in pure_dict not available in state: {path}")
        node = state.raw_mapping
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = replace(current[path], value)
