"""The graph-mode API: NNX functions with ``graph=True`` (and ``graph_updates=True``) defaults.

``nnx.compat.split(model)`` is ``nnx.split(model, graph=True)`` and
``nnx.compat.jit`` is ``nnx.jit`` with ``graph=True, graph_updates=True``,
whatever the global settings are.
"""

from __future__ import annotations

import functools
from types import ModuleType

from . import graphlib, module, rnglib, spmd, transforms

_GRAPH = {"graph": True}
_GRAPH_AND_UPDATES = {"graph": True, "graph_updates": True}

# (defining module, name, defaults)
_WRAPPED: list[tuple[ModuleType, str, dict[str, bool]]] = [
    (graphlib, "cached_partial", _GRAPH_AND_UPDATES),
    (graphlib, "clone", _GRAPH),
    (graphlib, "flatten", _GRAPH),
    (graphlib, "graphdef", _GRAPH),
    (graphlib, "iter_children", _GRAPH),
    (graphlib, "iter_graph", _GRAPH),
    (graphlib, "recursive_map", _GRAPH),
    (graphlib, "split", _GRAPH),
    (graphlib, "state", _GRAPH),
    (module, "iter_modules", _GRAPH),
    (module, "view", _GRAPH),
    (module, "view_info", _GRAPH),
    (spmd, "get_abstract_model", _GRAPH),
    (rnglib, "backup_keys", _GRAPH),
    (rnglib, "fork_rngs", _GRAPH_AND_UPDATES),
    (rnglib, "reseed", _GRAPH),
    (rnglib, "split_rngs", _GRAPH_AND_UPDATES),
    *(
        (transforms, name, _GRAPH_AND_UPDATES)
        for name in (
            "checkify",
            "cond",
            "custom_vjp",
            "eval_shape",
            "fori_loop",
            "grad",
            "jit",
            "jvp",
            "pmap",
            "remat",
            "scan",
            "shard_map",
            "switch",
            "value_and_grad",
            "vjp",
            "vmap",
            "while_loop",
        )
    ),
]

__all__: list[str] = []


def _wrap_all() -> None:
    """Define each wrapper (an area lacking its target is an error, not a silent gap)."""
    for area, name, defaults in _WRAPPED:
        globals()[name] = functools.partial(getattr(area, name), **defaults)
        __all__.append(name)


_wrap_all()
