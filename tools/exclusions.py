"""Why an example cannot run in the suite: the rules shared by docstring and guide examples."""

from __future__ import annotations

import re

#: A pattern found in an example's source excludes it, with this reason (first match wins).
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*!", re.M), "shell command (!...), needs a notebook kernel"),
    (re.compile(r"^\s*%timeit", re.M), "IPython magic %timeit (timing output is not a spec)"),
    (re.compile(r"^\s*%", re.M), "IPython magic, needs a notebook kernel"),
    (
        re.compile(
            r"\bflax import linen\b|\bflax\.linen\b|\bimport linen\b|\bnnx\.bridge\b"
            r"|\bfrom flax\.nnx import bridge\b"
        ),
        "Linen interop (flax.linen / nnx.bridge), out of scope",
    ),
    (
        re.compile(r"\b(?:import|from)\s+(?:tensorflow_datasets|datasets|grain|torchvision)\b"),
        "needs a data set download",
    ),
    (re.compile(r"\b(?:import|from)\s+(?:urllib|requests)\b"), "needs network access"),
)


def excluded_reason(source: str) -> str | None:
    """The reason `source` cannot run in the suite (a dependency, a kernel, Linen), or None."""
    for pattern, reason in _RULES:
        if pattern.search(source):
            return reason
    return None
