"""Resolving a layer's mode flags (``deterministic``, ``use_running_average``, ``decode``)."""

from __future__ import annotations

import typing as tp

__all__: list[str] = []


def first_from(*values: tp.Any, error_msg: str) -> tp.Any:
    """Returns the first value that is not ``None``; raises ``ValueError(error_msg)`` if none is."""
    for value in values:
        if value is not None:
            return value
    raise ValueError(error_msg)


def missing_flag_message(flag: str, layer: str, attribute: str) -> str:
    """The error for a mode flag given neither to the constructor, the call, nor ``nnx.view``."""
    return (
        f"No `{flag}` argument was provided to {layer}. Set it in one of these ways:\n\n"
        f"1. in the constructor:  self.{attribute} = nnx.{layer}(..., {flag}=True/False)\n"
        f"2. in the call:         self.{attribute}(x, {flag}=True/False)\n"
        f"3. with a view:         model_view = nnx.view(model, {flag}=True/False)\n"
    )
