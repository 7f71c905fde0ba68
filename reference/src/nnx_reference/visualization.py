"""display: prints NNX objects in their plain-text repr (treescope is not used)."""

from __future__ import annotations

import typing as tp

__all__ = ["display"]


def display(*args: tp.Any) -> None:
    """Prints each argument's repr (the layout the documentation shows)."""
    for x in args:
        print(repr(x))
