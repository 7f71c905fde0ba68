"""Per-thread configuration values and the one way of setting them.

A :class:`Setting` holds one value per thread. :class:`ConfigContext` sets a
group of Settings when called, and is also a context manager and a decorator;
:class:`BoolFlag` is its one-boolean form with flax's read-out classmethods.
``set_graph_mode``, ``set_graph_updates``, ``var_defaults`` and
``use_eager_sharding`` are all built on them.
"""

from __future__ import annotations

import functools
import os
import threading
import typing as tp
from collections.abc import Sequence

F = tp.TypeVar("F", bound=tp.Callable[..., tp.Any])


class Setting(threading.local):
    """One per-thread configuration value (each thread starts from ``default``)."""

    def __init__(self, default: tp.Any) -> None:
        self.default = default
        self.value = default


Update = tuple[Setting, tp.Any]
"""A Setting and the value to give it."""


def _replace(updates: tuple[Update, ...]) -> tuple[Update, ...]:
    """Sets each Setting to its value; returns the values they had."""
    previous = tuple((setting, setting.value) for setting, _ in updates)
    for setting, value in updates:
        setting.value = value
    return previous


class ConfigContext:
    """Sets configuration values when called; after a plain call they stay set.

    Used as a context manager, it restores on exit the values that were current
    before the call. Used as a decorator, it undoes the call's change at once and
    sets the values only while the decorated function runs.
    """

    def __init__(self, updates: Sequence[Update]) -> None:
        self._updates = tuple(updates)
        self._previous = _replace(self._updates)

    def __enter__(self) -> tp.Self:
        return self

    def __exit__(self, *exc: object) -> None:
        _replace(self._previous)

    def __call__(self, f: F) -> F:
        _replace(self._previous)
        updates = self._updates

        @functools.wraps(f)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            previous = _replace(updates)
            try:
                return f(*args, **kwargs)
            finally:
                _replace(previous)

        return wrapper  # type: ignore[return-value]


class BoolFlag(ConfigContext):
    """A ConfigContext over one boolean Setting, with flax's classmethods to read it."""

    _setting: tp.ClassVar[Setting]

    def __init__(self, value: bool, /) -> None:
        super().__init__(((self._setting, bool(value)),))

    @classmethod
    def get_stack(cls) -> list[bool]:
        """The values in effect, innermost last (here: just the current one)."""
        return [cls._setting.value]

    @classmethod
    def get_default(cls) -> bool:
        """The value before any call."""
        return cls._setting.default  # type: ignore[no-any-return]

    @classmethod
    def current_value(cls) -> bool:
        """The value in effect."""
        return cls._setting.value  # type: ignore[no-any-return]


def env_flag(name: str) -> bool:
    """The boolean the environment variable ``name`` holds (true when unset)."""
    return os.environ.get(name, "true").strip().lower() not in ("0", "false", "no", "off")


class Config:
    """The named options ``flax.config`` holds for NNX, read as attributes and set with
    :meth:`update` (for the whole process)."""

    def __init__(self, **options: Setting) -> None:
        self._options = options

    def __getattr__(self, name: str) -> tp.Any:
        options = self.__dict__.get("_options", {})
        if name not in options:
            raise AttributeError(f"Unknown config option: {name}")
        return options[name].value

    def update(self, name: str, value: tp.Any, /) -> None:
        """Sets the option ``name`` to ``value``."""
        if name not in self._options:
            raise AttributeError(f"Unrecognized config option: {name}")
        self._options[name].value = value


SOW_CAPTURE_NOOP = Setting(False)
"""Whether ``Module.sow`` and ``Module.perturb`` store nothing outside ``nnx.capture``
when not told (their ``capture_noop=None``)."""

config = Config(nnx_sow_capture_noop=SOW_CAPTURE_NOOP)
"""The NNX options of ``flax.config``."""
