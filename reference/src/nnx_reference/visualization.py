"""display: treescope's rendering under IPython when treescope is installed, as flax does;
printed objects otherwise (a plain script prints, IPython installed or not)."""

from __future__ import annotations

import importlib.util
import typing as tp

__all__ = ["display"]


def _in_ipython() -> bool:
    """Whether the code runs under IPython (a notebook kernel or the IPython shell)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


#: Whether display renders with treescope: treescope is installed and the code runs under
#: IPython, as flax decides (once, when the module loads).
USES_TREESCOPE = importlib.util.find_spec("treescope") is not None and _in_ipython()


def display(*args: tp.Any) -> None:
    """Displays each argument with treescope (``USES_TREESCOPE``), else prints it."""
    if USES_TREESCOPE:
        import treescope

        for x in args:
            treescope.display(x, ignore_exceptions=True, autovisualize=True)
        return
    for x in args:
        print(x)
