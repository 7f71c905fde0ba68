"""Tree-mode ``jit`` calls on a flat list of leaves, with one plan per argument structure.

A plain tree-mode call (no shardings, no donation) needs no lifting: Modules and
Variables are pytrees, so the arguments flatten in one pass to arrays, and the
compiled function rebuilds fresh copies from them. While tracing, the function
records which Variables it assigned; their new values are the only ones it
returns, so a call that mutates nothing writes nothing back.

A structure is handled here only when every Variable holds at least one plain leaf
(no Refs, no empty values): then a Variable passed twice shows as a leaf passed
twice, and :func:`TreeJit.call` hands such calls back to the general path, which
reports the sharing as an error.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax

from .. import reprlib
from .checks import check_no_aliasing
from .statics import Statics, insert_statics
from .trees import is_variable

_MAX_PLANS = 256
"""Structures remembered per function; past this the plans are rebuilt as they come."""


class NotHandled(Exception):
    """Raised while tracing when a call turns out to need the general path (a Ref leaf)."""


@dataclasses.dataclass(frozen=True)
class Assigned:
    """The positions, among the arguments' Variables, of those the function assigned
    (a pytree without leaves: JAX caches it with the trace)."""

    positions: tuple[int, ...]


jax.tree_util.register_static(Assigned)


class _Plan(tp.NamedTuple):
    """What one argument structure compiles to; ``jitted`` is None when the structure
    needs the general path."""

    jitted: jax.stages.Wrapped | None


def _variables(tree: tp.Any) -> list[tp.Any]:
    return [x for x in jax.tree_util.tree_leaves(tree, is_leaf=is_variable) if is_variable(x)]


def _handled(call: tp.Any) -> bool:
    """Whether every Variable of ``call`` holds plain leaves (see the module docstring)."""
    for variable in _variables(call):
        leaves = jax.tree_util.tree_leaves(variable.get_raw_value())
        if not leaves or any(map(reprlib.is_ref, leaves)):
            return False
    return not any(map(reprlib.is_ref, jax.tree_util.tree_leaves(call)))


class TreeJit:
    """The tree-mode fast path of one jitted function: a plan per argument structure."""

    def __init__(self, name: str, fun: tp.Callable, jit_kwargs: dict[str, tp.Any]):
        self.name = name
        self.fun = fun
        self.jit_kwargs = jit_kwargs
        self.plans: dict[tuple[jax.tree_util.PyTreeDef, Statics], _Plan] = {}

    def call(self, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], statics: Statics) -> tuple[bool, tp.Any]:
        """``(True, output)`` for a call handled here, ``(False, None)`` for the general path."""
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        if len(set(map(id, leaves))) != len(leaves):
            return False, None  # a leaf passed twice: maybe a shared Variable
        key = (treedef, statics)
        plan = self.plans.get(key)
        if plan is None:
            plan = self._plan(key, (args, kwargs))
        if plan.jitted is None:
            return False, None
        try:
            assigned, out, values = plan.jitted(*leaves)
        except NotHandled:
            self.plans[key] = _Plan(None)
            return False, None
        if assigned.positions:
            variables = _variables((args, kwargs))
            for position, value in zip(assigned.positions, values):
                variables[position].set_raw_value(value)
        return True, out

    def _plan(self, key: tuple[jax.tree_util.PyTreeDef, Statics], call: tp.Any) -> _Plan:
        if len(self.plans) >= _MAX_PLANS:
            self.plans.clear()
        treedef, statics = key
        plan = _Plan(jax.jit(self._pure(treedef, statics), **self.jit_kwargs) if _handled(call) else None)
        self.plans[key] = plan
        return plan

    def _pure(self, treedef: jax.tree_util.PyTreeDef, statics: Statics) -> tp.Callable[..., tp.Any]:
        """The function of the flat leaves that jax.jit compiles for one structure."""

        def pure(*leaves: tp.Any) -> tuple[Assigned, tp.Any, list[tp.Any]]:
            if any(map(reprlib.is_ref, leaves)):
                raise NotHandled
            dynamic = jax.tree_util.tree_unflatten(treedef, leaves)
            objs, objs_def = jax.tree_util.tree_flatten(dynamic, is_leaf=is_variable)
            slots = tuple(i for i, leaf in enumerate(objs) if is_variable(leaf))
            variables = [objs[i] for i in slots]
            before = [v.get_raw_value() for v in variables]
            args, kwargs = insert_statics(*dynamic, statics)
            out = self.fun(*args, **kwargs)
            check_no_aliasing(self.name, objs_def, slots, variables, out)
            positions = tuple(
                i for i, (v, old) in enumerate(zip(variables, before)) if v.get_raw_value() is not old
            )
            return Assigned(positions), out, [variables[i].get_raw_value() for i in positions]

        return pure
