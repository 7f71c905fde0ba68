"""The exceptions NNX raises for misuse of state, named as flax.errors names them.

``flax.nnx`` does not export these names either; callers match them by type name.
"""

from __future__ import annotations

_DOCS = "https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors."


def _with_docs(message: str, name: str) -> str:
    return f"{message} ({_DOCS}{name})"


class TraceContextError(Exception):
    """Raised when an object is mutated from a different JAX trace than the one it was created in."""

    def __init__(self, message: str) -> None:
        super().__init__(_with_docs(message, "TraceContextError"))


class ImmutableVariableError(Exception):
    """Raised when a Variable that cannot be updated here is set: one marked ``mutable=False``,
    or a hijax Variable without ``ref=True`` inside a JAX transformation."""

    def __init__(self, message: str) -> None:
        super().__init__(_with_docs(message, "ImmutableVariableError"))
