"""JAX platform set-up for the suite, and the platform markers' requirements.

``--device`` picks the JAX platform before JAX starts its backends. On CPU JAX gets
eight virtual devices, as flax's own doctest set-up gives it, so ``multi_device``
tests and doc examples that shard over eight devices run on one machine.

JAX keeps what it compiles in its persistent compilation cache (:data:`CACHE_DIR`, unless
``JAX_COMPILATION_CACHE_DIR`` names another folder), every program however quick to
compile: the suite compiles thousands of small programs, the same on every run, and
reading one back costs a fraction of compiling it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

PLATFORMS = ("cpu", "gpu", "tpu")
CPU_DEVICE_COUNT = 8
_CPU_COUNT_FLAG = "--xla_force_host_platform_device_count"
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnx-conformance" / "jax"
"""JAX's persistent compilation cache for the suite's runs, shared by every implementation
(a compiled program is keyed by the program itself, the JAX version and the platform)."""
_CACHE_SETTINGS = {
    "jax_compilation_cache_dir": str(CACHE_DIR),
    "jax_persistent_cache_min_compile_time_secs": 0.0,
}
"""JAX's options for the cache, each set only where its environment variable does not set it."""


class JaxEnvironment:
    """Sets JAX's platform and CPU device count, and puts the environment back after."""

    def __init__(self) -> None:
        self._saved: dict[str, str | None] = {}

    def _setenv(self, name: str, value: str) -> None:
        self._saved.setdefault(name, os.environ.get(name))
        os.environ[name] = value

    def configure(self, device: str | None) -> None:
        jax = sys.modules.get("jax")
        if device is not None:
            self._setenv("JAX_PLATFORMS", device)
            if jax is not None:
                _try_config(jax, "jax_platforms", device)
        if jax is None:
            flags = os.environ.get("XLA_FLAGS", "")
            if _CPU_COUNT_FLAG not in flags:
                self._setenv("XLA_FLAGS", f"{flags} {_CPU_COUNT_FLAG}={CPU_DEVICE_COUNT}".strip())
        else:
            _try_config(jax, "jax_num_cpu_devices", CPU_DEVICE_COUNT)
        for option, value in _CACHE_SETTINGS.items():
            if option.upper() not in os.environ:
                if jax is None:
                    self._setenv(option.upper(), str(value))
                else:
                    _try_config(jax, option, value)

    def restore(self) -> None:
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved.clear()


def _try_config(jax: object, option: str, value: object) -> None:
    """Set a JAX option; once JAX's backends are running it is too late and is left."""
    # RuntimeError: the backends already run; AttributeError: a JAX without this option.
    with contextlib.suppress(RuntimeError, AttributeError):
        jax.config.update(option, value)  # type: ignore[attr-defined]


def describe() -> str:
    """The devices JAX runs on, e.g. ``cpu (8 devices)``."""
    import jax

    devices = jax.devices()
    return f"{jax.default_backend()} ({len(devices)} device{'s' if len(devices) != 1 else ''})"


def unmet_requirement(item: pytest.Item) -> str | None:
    """Why ``item`` cannot run on the devices JAX has, or None when it can."""
    wanted = [name for name in PLATFORMS if item.get_closest_marker(name) is not None]
    multi = item.get_closest_marker("multi_device") is not None
    if not wanted and not multi:
        return None
    import jax

    backend = jax.default_backend()
    if wanted and backend not in wanted:
        return f"needs a {' or '.join(wanted)} device; JAX has {backend}"
    if multi and len(jax.devices()) < 2:
        return f"needs several devices; JAX has 1 {backend} device"
    return None
