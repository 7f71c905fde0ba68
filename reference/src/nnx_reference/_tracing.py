"""Which JAX trace an object was created under, so that mutations from another trace fail."""

from __future__ import annotations

import typing as tp

from jax._src import core as _core

from .errors import TraceContextError


def current_trace_state() -> tp.Any:
    """An opaque token for the current JAX trace (equal tokens mean the same trace)."""
    return _core.get_opaque_trace_state(convention="nnx")


def inside_transformation() -> bool:
    """Whether a JAX transformation (jit, grad, vmap, ...) is tracing the current code."""
    return not _core.trace_ctx.is_top_level()


def check_same_trace(created: tp.Any, what: str) -> None:
    """Raises :class:`TraceContextError` (``Cannot mutate <what> level``) unless the current trace is ``created``."""
    if created is not None and created != current_trace_state():
        raise TraceContextError(f"Cannot mutate {what} level")
