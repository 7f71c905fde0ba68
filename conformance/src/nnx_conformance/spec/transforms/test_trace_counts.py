"""Tracing laws of the transforms: a body is traced once per argument structure.

Repeated calls with arguments of the same structure reuse the trace, as ``jax.jit``
and ``jax.lax`` do, also when calls of two structures alternate; the count of Python
runs of the body across calls is the observable. flax 0.12.12 retraces the loop bodies on every call in graph mode, so
the loops are held to this law in tree mode; ``jit`` and ``scan`` (whose body flax
traces once) in both modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("property")

CALLS = 3
"""Calls with each structure; more than one, so that a retrace shows."""

STRUCTURES = {"one structure": 1, "two structures alternating": 2}
"""How many model structures the calls alternate between (a Linear with a bias, one without)."""


class Loop(NamedTuple):
    """A lifted transform: ``make(nnx, count, graph)`` defines its body (which calls
    ``count``) once and returns a function applying the transform to a model."""

    name: str
    make: Callable[[Any, Callable[[], None], bool], Callable[[Any], Any]]


def _cond(nnx: Any, count: Callable[[], None], graph: bool) -> Callable[[Any], Any]:
    def branch(m: Any, x: Any) -> Any:
        count()
        return m(x)

    return lambda model: nnx.cond(True, branch, branch, model, jnp.ones(2), graph=graph)


def _switch(nnx: Any, count: Callable[[], None], graph: bool) -> Callable[[Any], Any]:
    def branch(m: Any, x: Any) -> Any:
        count()
        return m(x)

    branches = [branch, branch]
    return lambda model: nnx.switch(1, branches, model, jnp.ones(2), graph=graph)


def _while_loop(nnx: Any, count: Callable[[], None], graph: bool) -> Callable[[Any], Any]:
    def cond(carry: Any) -> Any:
        return carry[1] < 2

    def body(carry: Any) -> Any:
        count()
        m, i = carry
        return m, i + 1

    return lambda model: nnx.while_loop(cond, body, (model, 0), graph=graph)


def _fori_loop(nnx: Any, count: Callable[[], None], graph: bool) -> Callable[[Any], Any]:
    def body(i: Any, m: Any) -> Any:
        count()
        return m

    return lambda model: nnx.fori_loop(0, 2, body, model, graph=graph)


LOOPS = [Loop("cond", _cond), Loop("switch", _switch), Loop("while_loop", _while_loop), Loop("fori_loop", _fori_loop)]


def _scan(nnx: Any, count: Callable[[], None], graph: bool) -> Callable[[Any], Any]:
    def body(m: Any, x: Any) -> Any:
        count()
        return m, m(x)

    scanned = nnx.scan(body, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), graph=graph)
    return lambda model: scanned(model, jnp.ones((3, 2)))


def _traces(nnx: Any, loop: Loop, graph: bool, structures: int) -> int:
    models = [nnx.Linear(2, 2, use_bias=index == 0, rngs=nnx.Rngs(0)) for index in range(structures)]
    runs = []
    call = loop.make(nnx, lambda: runs.append(1), graph)
    for _ in range(CALLS):
        for model in models:
            call(model)
    return len(runs)


@pytest.mark.apis("cond", "switch", "while_loop", "fori_loop")
@pytest.mark.parametrize("structures", STRUCTURES.values(), ids=STRUCTURES.keys())
@pytest.mark.parametrize("loop", LOOPS, ids=[loop.name for loop in LOOPS])
def test_a_tree_mode_loop_body_is_traced_once_per_structure_across_calls(nnx: Any, loop: Loop, structures: int) -> None:
    traces = _traces(nnx, loop, False, structures)
    assert traces == structures, (
        f"nnx.{loop.name} ran its body {traces} times across {CALLS} calls of {structures} structure(s), "
        f"expected one trace per structure"
    )


@pytest.mark.apis("scan")
@pytest.mark.parametrize("structures", STRUCTURES.values(), ids=STRUCTURES.keys())
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_scan_body_is_traced_once_per_structure_across_calls(nnx: Any, graph: bool, structures: int) -> None:
    traces = _traces(nnx, Loop("scan", _scan), graph, structures)
    assert traces == structures, (
        f"nnx.scan ran its body {traces} times across {CALLS} calls of {structures} structure(s), "
        f"expected one trace per structure"
    )


@pytest.mark.apis("jit")
@pytest.mark.parametrize("donated", [False, True], ids=["", "its input donated"])
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_jitted_function_is_traced_once_across_calls_of_the_same_structure(
    nnx: Any, graph: bool, donated: bool
) -> None:
    runs = []

    def forward(m: Any, x: Any) -> Any:
        runs.append(1)
        return m(x)

    jitted = nnx.jit(forward, graph=graph, donate_argnums=1 if donated else None)
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    for _ in range(CALLS):
        jitted(model, jnp.ones(2))
    assert len(runs) == 1, f"nnx.jit traced its function {len(runs)} times across {CALLS} calls, expected 1"
    for seed in range(1, CALLS):
        jitted(nnx.Linear(2, 2, rngs=nnx.Rngs(seed)), jnp.ones(2))
    assert len(runs) == 1, (
        f"nnx.jit traced its function again for new models of the same structure ({len(runs)} traces)"
    )


@pytest.mark.apis("jit")
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_jitted_function_is_traced_once_per_structure_when_two_alternate(nnx: Any, graph: bool) -> None:
    runs = []

    def forward(m: Any, x: Any) -> Any:
        runs.append(1)
        return m(x)

    jitted = nnx.jit(forward, graph=graph)
    models = [nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 2, use_bias=False, rngs=nnx.Rngs(0))]
    for _ in range(CALLS):
        for model in models:
            jitted(model, jnp.ones(2))
    assert len(runs) == 2, (
        f"nnx.jit traced {len(runs)} times across {CALLS} calls of two alternating structures, expected 2"
    )
