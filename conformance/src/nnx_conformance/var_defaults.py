"""The implementation's global Variable defaults (``var_defaults``), kept from leaking
across doc pages.

A page may set them for the rest of its cells (the hijax guide sets ``hijax=True``);
in a notebook the next page gets a fresh kernel. So every page starts from the
defaults the run began with.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class VarDefaults:
    """The ``hijax`` and ``ref`` defaults new Variables take."""

    hijax: bool
    ref: bool

    @classmethod
    def read(cls, nnx: ModuleType | None) -> VarDefaults | None:
        """The implementation's current defaults; None if it has no working ``var_defaults``
        (one that raises is the implementation's failure, which its own tests report: the
        run goes on, with pages not reset)."""
        var_defaults = getattr(nnx, "var_defaults", None)
        if var_defaults is None:
            return None
        try:
            current = var_defaults()
            return cls(bool(current.hijax), bool(current.ref))
        except Exception:  # noqa: BLE001 - the implementation's failure, reported by its own tests
            return None

    def restore(self, nnx: ModuleType) -> None:
        """Set these defaults again, as the documented ``nnx.var_defaults(hijax=..., ref=...)`` does."""
        nnx.var_defaults(hijax=self.hijax, ref=self.ref)
