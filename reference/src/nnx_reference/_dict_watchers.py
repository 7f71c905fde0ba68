"""A callback on every change to chosen dicts: CPython's dict watchers (``PyDict_AddWatcher``,
part of the C API since Python 3.12), reached through ctypes.

A cache of a Pytree's structure must see every change to its attributes, those made
without ``__setattr__`` too (``object.__setattr__``, ``vars(obj)[name] = ...``,
``vars(obj).update(...)``, ``object.__delattr__``); a watched dict reports each one, so
the cache need not compare the attributes on every call. A probe checks that this
interpreter reports every such change to an object's attributes (Python 3.13 stores
some objects' attributes outside their dict, unreported); where it does not, or the API
is missing, :func:`watcher` gives None and caches compare contents instead.
"""

from __future__ import annotations

import atexit
import ctypes
import typing as tp

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
"""``PyDict_WatchCallback``: the event, the dict, the key and the new value (raw pointers:
the callback must not hold a dict being freed)."""


_DEALLOCATED = 5
"""``PyDict_EVENT_DEALLOCATED``: a watched dict is being freed (no change to report)."""


class DictWatcher:
    """One of the interpreter's dict watchers: ``on_change`` is given the address (``id``)
    of a dict given to :meth:`watch` on every change to it."""

    def __init__(self, on_change: tp.Callable[[int], None]) -> None:
        def report(event: int, d: int, key: int | None, value: int | None) -> int:
            if event != _DEALLOCATED:
                on_change(d)
            return 0

        self._callback = _CALLBACK(report)  # kept: the interpreter holds only its address
        api = ctypes.pythonapi
        api.PyDict_AddWatcher.argtypes = [_CALLBACK]
        api.PyDict_AddWatcher.restype = ctypes.c_int
        api.PyDict_Watch.argtypes = [ctypes.c_int, ctypes.py_object]
        api.PyDict_Watch.restype = ctypes.c_int
        api.PyDict_ClearWatcher.argtypes = [ctypes.c_int]
        api.PyDict_ClearWatcher.restype = ctypes.c_int
        self._api = api
        self._id: int | None = api.PyDict_AddWatcher(self._callback)
        atexit.register(self.close)  # no callback into a finalizing interpreter

    def watch(self, d: dict[tp.Any, tp.Any]) -> None:
        """Reports every later change to ``d``."""
        if self._id is not None:
            self._api.PyDict_Watch(self._id, d)

    def close(self) -> None:
        """Stops every report (the watched dicts keep a flag that no callback reads)."""
        if self._id is not None:
            self._api.PyDict_ClearWatcher(self._id)
            self._id = None


class _Probe:
    """An object of a plain class, whose attributes the probe changes in every way."""

    def __init__(self) -> None:
        self.a = 0
        self.b = 0


_REPEATS = 16
"""Stores of one attribute in a loop: enough for the interpreter to specialize the store."""


def _changes(obj: _Probe) -> list[tp.Callable[[], object]]:
    """Ways to change an object's attributes without its class's ``__setattr__``, each
    reported once (the first: once a store)."""

    def assign_in_a_loop() -> None:
        for i in range(1, _REPEATS + 1):  # a store of the object already there is no change
            obj.a = i

    return [
        assign_in_a_loop,
        lambda: object.__setattr__(obj, "a", 1),
        lambda: object.__setattr__(obj, "c", 1),
        lambda: vars(obj).__setitem__("a", 2),
        lambda: vars(obj).update(a=3),
        lambda: object.__delattr__(obj, "c"),
        lambda: vars(obj).pop("b"),
        lambda: vars(obj).setdefault("b", 4),
        lambda: dict.__setitem__(vars(obj), "a", 5),
        lambda: vars(obj).clear(),
    ]


def watcher(on_change: tp.Callable[[int], None]) -> DictWatcher | None:
    """A dict watcher calling ``on_change``, or None where this interpreter has none or
    leaves out a change the probe makes."""
    reports = 0

    def count(_: int) -> None:
        nonlocal reports
        reports += 1

    try:
        probe = DictWatcher(count)
    except (AttributeError, RuntimeError):  # no such API, or every watcher id is taken
        return None
    obj = _Probe()
    probe.watch(vars(obj))
    missed = False
    for i, change in enumerate(_changes(obj)):
        before = reports
        change()
        missed = missed or reports - before != (_REPEATS if i == 0 else 1)
    probe.close()
    if missed:
        return None
    return DictWatcher(on_change)
