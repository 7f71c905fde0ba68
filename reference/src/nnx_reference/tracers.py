"""The JAX trace an NNX object belongs to."""

from __future__ import annotations

import typing as tp

import jax

from . import reprlib
from ._tracing import current_trace_state

__all__ = ["TraceState", "current_jax_trace"]


def current_jax_trace() -> tp.Any:
    """An opaque token for the JAX trace that is active now (equal tokens, same trace)."""
    return current_trace_state()


class TraceState:
    """Records the JAX trace active when it was created; a pytree without leaves."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self._jax_trace = current_jax_trace()

    @property
    def jax_trace(self) -> tp.Any:
        """The trace token recorded at creation."""
        return self._jax_trace

    def is_valid(self) -> bool:
        """Whether the current JAX trace is the one this state was created in."""
        return self._jax_trace == current_jax_trace()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TraceState) and self._jax_trace == other._jax_trace

    def __repr__(self) -> str:
        return reprlib.object_repr("TraceState", "", [("jax_trace", repr(self._jax_trace))])

    def __treescope_repr__(self, path: str | None, subtree_renderer: tp.Callable[..., tp.Any]) -> tp.Any:
        return reprlib.treescope_constructor(type(self), {"jax_trace": self._jax_trace}, path, subtree_renderer)


jax.tree_util.register_pytree_node(TraceState, lambda state: ((), None), lambda _, __: TraceState())
