"""Tree mode's precondition: no shared Variables or array Refs, no cycles."""

from __future__ import annotations

import typing as tp

from .. import reprlib
from ..pytreelib import Pytree
from ..variablelib import Variable
from ._nodes import PathParts, children_of


class _Reached(tp.NamedTuple):
    """Where the walk reached an object: its NNX path and that path as ``jax.tree_util.keystr`` writes it."""

    path: PathParts
    keystr: str


PathStyle = tp.Literal["keystr", "slashes"]
"""How an error lists paths: ``.child.bias`` (as split and state do) or ``child/bias``."""


def check_tree(node: tp.Any, api: str, style: PathStyle) -> None:
    """Raises ``ValueError`` where tree mode (``graph=False``) cannot take ``node`` apart:
    a Variable or array Ref reached twice, a Pytree reached again inside itself, or a
    Pytree made with ``pytree=False`` (not a JAX pytree)."""
    shared: dict[int, _Reached] = {}

    def visit(x: tp.Any, here: _Reached, ancestors: dict[int, _Reached]) -> None:
        if isinstance(x, Variable) or reprlib.is_ref(x):
            if id(x) in shared:
                raise ValueError(_duplicate_message(x, (shared[id(x)], here), api, style))
            shared[id(x)] = here
            return
        if isinstance(x, Pytree):
            if not type(x)._pytree__is_pytree:
                raise ValueError(_not_a_pytree_message(x, here, api, style))
            if id(x) in ancestors:
                raise ValueError(_cycle_message(x, (ancestors[id(x)], here), api, style))
            ancestors = {**ancestors, id(x): here}
        for key, child in children_of(x):
            step = f".{key}" if isinstance(x, Pytree) and isinstance(key, str) else f"[{key!r}]"
            visit(child, _Reached((*here.path, key), here.keystr + step), ancestors)

    visit(node, _Reached((), ""), {})


def _written(reached: _Reached, style: PathStyle) -> str:
    return reached.keystr if style == "keystr" else "/".join(map(str, reached.path))


def _listing(reached: tuple[_Reached, _Reached], style: PathStyle) -> str:
    return "\n".join(f"  - {_written(r, style)}" for r in reached)


def _options(api: str) -> str:
    return (
        "Consider the following options:\n\n1. Remove the duplicates and guarantee a tree structure.\n"
        f"2. Enable graph mode by passing graph=True to {api} e.g.\n\n  nnx.{api}(..., graph=True)\n\n"
        f"3. Use nnx.compat.{api} instead e.g.\n\n  nnx.compat.{api}(...)"
    )


def _not_a_pytree_message(x: tp.Any, here: _Reached, api: str, style: PathStyle) -> str:
    # flax names its flatten for the functions that flatten (split, state, clone, ...), the
    # traversals (iter_graph, recursive_map, their paths in slashes) by their own names
    walker = api if style == "slashes" else "flatten"
    found = f"Found at path: {_written(here, style)}. " if here.path else ""
    return (
        f"Cannot use '{walker}' with graph=False on a '{type(x).__name__}' instance that has pytree=False. "
        f"{found}Pytree subclasses with pytree=False are not registered as JAX pytrees and cannot be used "
        f"in tree-mode. {_options(walker)}"
    )


def _duplicate_message(x: tp.Any, reached: tuple[_Reached, _Reached], api: str, style: PathStyle) -> str:
    return (
        f"Duplicate {x!r}\nfound at paths:\n\n{_listing(reached, style)}\n\n"
        f"Tree mode (graph=False) does not support shared references. {_options(api)}"
    )


def _cycle_message(x: Pytree, reached: tuple[_Reached, _Reached], api: str, style: PathStyle) -> str:
    return (
        f"Cycle detected for {type(x).__name__}\nfound at paths:\n\n{_listing(reached, style)}\n\n"
        f"Cycles are not supported with graph=False. {_options(api)}"
    )
