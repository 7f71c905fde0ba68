"""display: treescope's rendering in IPython when treescope is installed, as flax does;
printed objects otherwise."""

from __future__ import annotations

import importlib.util
import typing as tp

__all__ = ["display"]

#: Whether display renders with treescope: both treescope and IPython are installed
#: (decided once, when the module loads).
USES_TREESCOPE = all(importlib.util.find_spec(name) is not None for name in ("treescope", "IPython"))


def display(*args: tp.Any) -> None:
    """Displays each argument with treescope (``USES_TREESCOPE``), else prints it."""
    if USES_TREESCOPE:
        import treescope

        for x in args:
            treescope.display(x, ignore_exceptions=True, autovisualize=True)
        return
    for x in args:
        print(x)
