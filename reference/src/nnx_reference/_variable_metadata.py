"""What a new Variable starts from: default settings, metadata, hooks and storage.

:func:`var_defaults` holds the ``hijax`` / ``ref`` defaults; :func:`with_metadata`
wraps an initializer so that its value arrives with metadata and hooks (a
:class:`VariableMetadata`); :func:`as_ref` is how a ``ref=True`` Variable stores
its value; :class:`Metadata` is the dict a Variable keeps its metadata in. The public
face of these is :mod:`variablelib`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing as tp
import warnings

import jax
import numpy as np

from . import _structure, reprlib
from ._config import ConfigContext, Setting

A = tp.TypeVar("A")


class _Missing:
    """Sentinel for 'argument not given'."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: tp.Any = _Missing()
REQUIRED_METADATA = ("hijax", "ref", "eager_sharding")
HOOK_NAMES = ("on_get_value", "on_set_value", "on_create_value", "on_add_axis", "on_remove_axis")
"""The metadata keys a Variable runs as hooks, in the order a :class:`VariableMetadata` adds them."""
HOOKS_DEPRECATED = (
    "Variable hooks are deprecated. Create your own Variable type and overload `get_value` and `set_value` instead."
)
"""flax's UserWarning for a Variable made with hooks (it points inside the library, as flax's)."""

# flax's DeprecationWarnings for reading and setting ``.value`` and ``.raw_value``
VALUE_GET_DEPRECATED = (
    "'.value' access is now deprecated. For Variable[Array] instances use:\n\n  variable[...]\n\n"
    "For other Variable types use:\n\n  variable.get_value()\n"
)
VALUE_SET_DEPRECATED = (
    "'.value' setter is now deprecated. For Variable[Array] instances use:\n\n  variable[...] = value\n\n"
    "For other Variable types use:\n\n  variable.set_value(value)\n"
)
RAW_VALUE_GET_DEPRECATED = "'.raw_value' access is now deprecated. Use:\n\n  variable.get_raw_value()\n"
RAW_VALUE_SET_DEPRECATED = "'.raw_value' setter is now deprecated. Use:\n\n  variable.set_raw_value(value)\n"


# ---------------------------------------------------------------- defaults


@dataclasses.dataclass(frozen=True)
class VarDefaults(tp.Mapping[str, bool]):
    """The defaults new Variables take for ``hijax`` and ``ref``; also a mapping of them by name."""

    hijax: bool
    ref: bool

    def __getitem__(self, key: str) -> bool:
        return getattr(self, key)  # type: ignore[no-any-return]

    def __iter__(self) -> tp.Iterator[str]:
        return iter(field.name for field in dataclasses.fields(self))

    def __len__(self) -> int:
        return len(dataclasses.fields(self))


_HIJAX = Setting(False)
_REF = Setting(False)


class VarDefaultsContext(ConfigContext):
    """Sets new Variable defaults when called (see :class:`ConfigContext` for the
    call / context-manager / decorator forms); only the fields given change."""


def var_defaults(*, hijax: bool | None = None, ref: bool | None = None) -> VarDefaultsContext | VarDefaults:
    """Returns the current Variable defaults, or sets ``hijax``/``ref`` defaults (also a
    context manager or decorator)."""
    if hijax is None and ref is None:
        return VarDefaults(hijax=_HIJAX.value, ref=_REF.value)
    updates = [(setting, bool(value)) for setting, value in ((_HIJAX, hijax), (_REF, ref)) if value is not None]
    return VarDefaultsContext(updates)


DEPRECATED_SHARDING_KEYS = ("sharding_names", "sharding")
"""Older names of the ``out_sharding`` metadata key, renamed (with a warning) on creation."""


def rename_sharding_keys(metadata: dict[str, tp.Any], stacklevel: int = 2) -> None:
    """Renames the deprecated sharding keys of a Variable's new ``metadata`` in place, warning
    (with ``warnings.warn``'s ``stacklevel``)."""
    for key in DEPRECATED_SHARDING_KEYS:
        if key in metadata:
            warnings.warn(
                f"{key!r} is deprecated, use 'out_sharding' instead.", DeprecationWarning, stacklevel=stacklevel
            )
            metadata["out_sharding"] = metadata.pop(key)


# ---------------------------------------------------------------- metadata


@dataclasses.dataclass
class VariableMetadata(tp.Generic[A]):
    """A raw value plus hooks and metadata, as returned by :func:`with_metadata` initializers."""

    raw_value: A
    on_set_value: tuple[tp.Callable[..., tp.Any], ...] = ()
    on_get_value: tuple[tp.Callable[..., tp.Any], ...] = ()
    on_create_value: tuple[tp.Callable[..., tp.Any], ...] = ()
    on_add_axis: tuple[tp.Callable[..., tp.Any], ...] = ()
    on_remove_axis: tuple[tp.Callable[..., tp.Any], ...] = ()
    metadata: tp.Mapping[str, tp.Any] = dataclasses.field(default_factory=dict)


def _hooks_tuple(hooks: tp.Any) -> tuple[tp.Callable[..., tp.Any], ...]:
    if hooks is None:
        return ()
    return tuple(hooks) if isinstance(hooks, (list, tuple)) else (hooks,)


def with_metadata(
    initializer: tp.Callable[..., tp.Any],
    on_set_value: tp.Any = (),
    on_get_value: tp.Any = (),
    on_create_value: tp.Any = (),
    on_add_axis: tp.Any = (),
    on_remove_axis: tp.Any = (),
    **metadata: tp.Any,
) -> tp.Callable[..., VariableMetadata[tp.Any]]:
    """Wraps an initializer so that its output carries ``metadata`` (and hooks) into a Variable;
    hooks are deprecated (flax's UserWarning)."""
    if any((on_set_value, on_get_value, on_create_value, on_add_axis, on_remove_axis)):
        warnings.warn(
            "Variable hooks are deprecated in favor of users creating their own Variable types and "
            "overloading `get_value` and `set_value` instead.",
            UserWarning,
            stacklevel=1,
        )

    @functools.wraps(initializer)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> VariableMetadata[tp.Any]:
        return VariableMetadata(
            initializer(*args, **kwargs),
            on_set_value=_hooks_tuple(on_set_value),
            on_get_value=_hooks_tuple(on_get_value),
            on_create_value=_hooks_tuple(on_create_value),
            on_add_axis=_hooks_tuple(on_add_axis),
            on_remove_axis=_hooks_tuple(on_remove_axis),
            metadata=metadata,
        )

    return wrapper


def unpack(
    value: VariableMetadata[A], metadata: dict[str, tp.Any], given: dict[str, bool | None]
) -> tuple[A, dict[str, tp.Any]]:
    """The raw value of a ``VariableMetadata`` and the constructor's ``metadata`` with its
    metadata (which wins) and hooks (which do not); ``hijax``, ``ref`` and ``eager_sharding``
    it names go into ``given``, which may repeat them but not contradict them (ValueError)."""
    extra = dict(value.metadata)
    for key in REQUIRED_METADATA:
        if key not in extra:
            continue
        if given[key] is not None and given[key] != extra[key]:
            raise ValueError(
                f"Cannot specify {key} both in VariableMetadata and as an argument to Variable constructor."
            )
        given[key] = extra[key] if key == "eager_sharding" else extra.pop(key)
    metadata = {**metadata, **extra}
    for name in HOOK_NAMES:
        if hooks := getattr(value, name):
            metadata.setdefault(name, hooks)
    return value.raw_value, metadata


# ---------------------------------------------------------------- storage


def wants_ref(metadata: tp.Mapping[str, tp.Any]) -> bool:
    """Whether a Variable with this metadata stores its value in a ``jax.Ref``: ``ref=True``."""
    return bool(metadata.get("ref"))


def as_ref(value: tp.Any) -> tp.Any:
    """``value`` in a mutable ``jax.Ref`` (arrays only), so that writes inside ``jax.jit`` are seen outside."""
    if reprlib.is_ref(value) or not isinstance(value, (jax.Array, np.ndarray, int, float, bool)):
        return value
    return jax.new_ref(jax.numpy.asarray(value))


def same_items(a: tuple[tuple[str, tp.Any], ...], b: tuple[tuple[str, tp.Any], ...]) -> bool:
    """Whether two sorted metadata tuples hold the same keys and values (values that do not
    compare to a bool count as different unless they are the same object)."""
    if len(a) != len(b):
        return False
    for (key_a, value_a), (key_b, value_b) in zip(a, b):
        if key_a != key_b:
            return False
        if value_a is value_b:
            continue
        try:
            if not bool(value_a == value_b):
                return False
        except Exception:  # noqa: BLE001 - a user's metadata value may raise anything from == or bool()
            return False
    return True


def sorted_items(metadata: tp.Mapping[str, tp.Any]) -> tuple[tuple[str, tp.Any], ...]:
    """A Variable's metadata items sorted by key: its pytree auxiliary data. Made anew each
    time: a mapping can change without its methods (``dict.__setitem__(metadata, ...)``)."""
    return tuple(sorted(metadata.items()))


class Metadata(dict[str, tp.Any]):
    """A Variable's metadata: a dict whose changes count as structural (see :mod:`._structure`)."""

    def _changed(self) -> None:
        _structure.changed(self)

    def __setitem__(self, key: str, value: tp.Any) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed()
        super().__delitem__(key)

    def __ior__(self, other: tp.Any) -> tp.Self:  # type: ignore[override]
        self._changed()
        return super().__ior__(other)

    def update(self, *args: tp.Any, **kwargs: tp.Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: tp.Any = None) -> tp.Any:
        self._changed()
        return super().setdefault(key, default)

    def pop(self, *args: tp.Any) -> tp.Any:
        self._changed()
        return super().pop(*args)

    def popitem(self) -> tuple[str, tp.Any]:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()
