"""The global graph mode against a call's own ``graph=`` and ``graph_updates=``, for every
transform and graph function.

The law: a per-call argument that is given decides, whatever the global switches say; one
that is left out takes its global switch's value. It is observed on a Module whose
attributes ``a`` and ``b`` hold one shared Param (the NNX Basics guide's Graph Mode
scenario), which graph mode with graph updates accepts and tree mode refuses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.describe import describe

pytestmark = pytest.mark.kind("property")

GUIDE = "guide:nnx_basics (newer than the pin: Graph Mode, a shared Param under tree mode and nnx.jit(graph=True))"


class Switches(NamedTuple):
    """Graph mode and graph updates: the global switches (both set) or a call's own
    arguments (None: left out)."""

    graph: bool | None
    updates: bool | None


@dataclass(frozen=True)
class Setting:
    """The global switches around a call, and the call's own arguments."""

    global_: Switches
    per_call: Switches

    def kwargs(self, takes_updates: bool) -> dict[str, bool]:
        given = {"graph": self.per_call.graph, "graph_updates": self.per_call.updates if takes_updates else None}
        return {name: value for name, value in given.items() if value is not None}

    def resolved(self) -> Setting:
        """The same call with every argument given, under the opposite global switches."""
        graph = self.global_.graph if self.per_call.graph is None else self.per_call.graph
        updates = self.global_.updates if self.per_call.updates is None else self.per_call.updates
        assert self.global_.graph is not None and self.global_.updates is not None
        return Setting(Switches(not self.global_.graph, not self.global_.updates), Switches(graph, updates))


def _body(m: Any) -> Any:
    m.a[...] += 1.0
    return m.a[...] * 2.0 + m.b[...]


def _read(m: Any, *rest: Any) -> Any:
    return m.a[...] * 3.0 + m.b[...]


def _loss(m: Any) -> Any:
    return (m.a[...] * m.b[...]).sum()


def _loop_body(i: Any, m: Any) -> Any:
    m.a[...] += 1.0
    return m


def _scan(nnx: Any, m: Any, kw: dict[str, bool]) -> Any:
    def step(m: Any, x: Any) -> Any:
        m.a[...] += x
        return m, m.b[...]

    return nnx.scan(step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw)(m, jnp.ones(2))


def _custom_vjp(nnx: Any, m: Any, kw: dict[str, bool]) -> Any:
    f = nnx.custom_vjp(_read, **kw)
    f.defvjp(lambda m: (f(m), None), lambda res, g: g)
    return f(m)


Call = Callable[[Any, Any, dict[str, bool]], Any]

TRANSFORMS: dict[str, Call] = {
    "jit": lambda nnx, m, kw: nnx.jit(_body, **kw)(m),
    "jit_partial": lambda nnx, m, kw: nnx.jit_partial(_body, m, **kw)(),
    "grad": lambda nnx, m, kw: nnx.grad(_loss, **kw)(m),
    "value_and_grad": lambda nnx, m, kw: nnx.value_and_grad(_loss, **kw)(m),
    "vmap": lambda nnx, m, kw: nnx.vmap(_read, in_axes=(None, 0), **kw)(m, jnp.ones(3)),
    "scan": _scan,
    "remat": lambda nnx, m, kw: nnx.remat(_body, **kw)(m),
    "eval_shape": lambda nnx, m, kw: nnx.eval_shape(_read, m, **kw),
    "cond": lambda nnx, m, kw: nnx.cond(True, _body, _read, m, **kw),
    "switch": lambda nnx, m, kw: nnx.switch(0, [_body, _read], m, **kw),
    "fori_loop": lambda nnx, m, kw: nnx.fori_loop(0, 2, _loop_body, m, **kw),
    "while_loop": lambda nnx, m, kw: nnx.while_loop(lambda m: m.a[...] < 3.0, lambda m: _loop_body(0, m), m, **kw),
    "checkify": lambda nnx, m, kw: nnx.checkify(_body, **kw)(m),
    "custom_vjp": _custom_vjp,
    "make_jaxpr": lambda nnx, m, kw: nnx.make_jaxpr(_read, **kw)(m),
}
"""Each transform called on the shared-Param Module, with the arguments ``kw``."""

GRAPH_FUNCTIONS: dict[str, Call] = {
    "split": lambda nnx, m, kw: nnx.split(m, **kw),
    "state": lambda nnx, m, kw: nnx.state(m, **kw),
    "graphdef": lambda nnx, m, kw: nnx.graphdef(m, **kw),
    "clone": lambda nnx, m, kw: nnx.clone(m, **kw),
    "flatten": lambda nnx, m, kw: nnx.flatten(m, **kw)[1],
    "variables": lambda nnx, m, kw: nnx.variables(m, **kw),
    "iter_graph": lambda nnx, m, kw: list(nnx.iter_graph(m, **kw)),
    "iter_children": lambda nnx, m, kw: list(nnx.iter_children(m, **kw)),
    "recursive_map": lambda nnx, m, kw: nnx.recursive_map(lambda path, node: node, m, **kw),
    "map": lambda nnx, m, kw: nnx.map(lambda path, value: value * 2, m, **kw),
    "view": lambda nnx, m, kw: nnx.view(m, **kw),
    "as_abstract": lambda nnx, m, kw: nnx.as_abstract(m, **kw),
}
"""Each graph function called on the shared-Param Module (``graph=`` only)."""

CALLS = {**TRANSFORMS, **GRAPH_FUNCTIONS}

settings = st.builds(
    Setting,
    st.builds(Switches, st.booleans(), st.booleans()),
    st.builds(Switches, st.none() | st.booleans(), st.none() | st.booleans()),
)


def shared_param_module(nnx: Any) -> Any:
    """A Module whose ``a`` and ``b`` are one Param holding 1.0."""
    p = nnx.Param(jnp.asarray(1.0))
    return gs.classes(nnx).node(a=p, b=p)


@contextlib.contextmanager
def switched(nnx: Any, switches: Switches) -> Iterator[None]:
    """The global switches set for the block, put back after it."""
    with nnx.set_graph_mode(switches.graph), nnx.set_graph_updates(switches.updates):
        yield


def outcome(nnx: Any, name: str, setting: Setting) -> Any:
    """What the call does in ``setting``: the exception's type, or its result and the Module after it."""
    m = shared_param_module(nnx)
    with switched(nnx, setting.global_):
        try:
            result = CALLS[name](nnx, m, setting.kwargs(takes_updates=name in TRANSFORMS))
        except (ValueError, TypeError, NotImplementedError) as error:
            return ("raises", type(error).__name__)
    return describe(nnx, (result, m))


@pytest.mark.apis(*CALLS, "set_graph_mode", "set_graph_updates")
@pytest.mark.documented("api graph and transforms pages (graph, graph_updates: None uses the global default)")
@pytest.mark.parametrize("name", sorted(CALLS))
@given(setting=settings)
def test_a_given_argument_decides_and_a_left_out_one_takes_the_global_switch(
    nnx: Any, name: str, setting: Setting
) -> None:
    resolved = setting.resolved()
    got, expected = outcome(nnx, name, setting), outcome(nnx, name, resolved)
    assert got == expected, (
        f"nnx.{name} under global {setting.global_} with {setting.kwargs(name in TRANSFORMS)} should do what it does "
        f"under global {resolved.global_} with {resolved.kwargs(name in TRANSFORMS)}: {got!r} != {expected!r}"
    )


ACCEPTING = {name: Switches(True, True) for name in CALLS if name != "make_jaxpr"} | {
    "jit_partial": Switches(True, False)
}
"""The arguments with which graph mode accepts the shared Param (flax 0.12.12: jit_partial rejects
graph updates, make_jaxpr rejects graph updates and, without them, aliased Variables)."""

LETTING_THROUGH = ("fori_loop", "while_loop", "iter_children")
"""Calls that flax 0.12.12 runs in tree mode on the shared Param: iter_children looks at the
Module's direct children only; the loops do not check their carry for aliasing (and return a
carry whose update the shared Param does not get), which the docs neither state nor rule out."""


@pytest.mark.apis(*ACCEPTING, "set_graph_mode")
@pytest.mark.documented(GUIDE)
@pytest.mark.parametrize("name", sorted(ACCEPTING))
def test_graph_mode_accepts_the_shared_param_under_global_tree_mode(nnx: Any, name: str) -> None:
    setting = Setting(Switches(False, False), ACCEPTING[name])
    accepted = outcome(nnx, name, setting)
    assert accepted[0] != "raises", (
        f"nnx.{name}(**{setting.kwargs(name in TRANSFORMS)}) under global tree mode raises {accepted[1]}"
    )


@pytest.mark.apis(*CALLS, "set_graph_mode")
@pytest.mark.documented(GUIDE)
@pytest.mark.parametrize("name", sorted(set(CALLS) - set(LETTING_THROUGH)))
def test_tree_mode_refuses_the_shared_param_under_global_graph_mode(nnx: Any, name: str) -> None:
    refused = outcome(nnx, name, Setting(Switches(True, True), Switches(False, False)))
    assert refused == ("raises", "ValueError"), (
        f"nnx.{name}(graph=False) under global graph mode should refuse the shared Param with ValueError: {refused!r}"
    )


def _forward(m: Any, x: Any) -> Any:
    """The guide's ``forward``."""
    m.a[...] += 1.0
    return m.a * x + m.b


@pytest.mark.apis("jit", "set_graph_mode", "set_graph_updates")
@pytest.mark.documented(GUIDE)
def test_the_guide_s_tree_mode_jit_refuses_the_shared_param_and_graph_true_updates_it_once(nnx: Any) -> None:
    m = shared_param_module(nnx)
    with switched(nnx, Switches(False, False)):
        with pytest.raises(ValueError):
            nnx.jit(_forward)(m, jnp.asarray(1.0))
        assert float(m.a[...]) == 1.0, f"the refused call leaves the Param at 1.0, not {m.a[...]}"
        y = nnx.jit(_forward, graph=True)(m, jnp.asarray(1.0))
    assert float(y) == 4.0, f"a += 1 gives 2.0, then a * 1.0 + b is 4.0, not {y}"
    assert m.a is m.b and float(m.b[...]) == 2.0, f"the update reaches the one shared Param: a={m.a[...]}, b={m.b[...]}"
