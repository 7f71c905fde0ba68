"""Differential test of NNX transforms called inside a raw ``jax.jit`` on a Module made
outside it: as in flax, the call runs, or raises flax's error (``TraceContextError`` when
it would write a Variable of the outer level: always for the loops, cond, switch and
scan without graph updates, which write back every Variable; for the others only the
Variables the function updated), and the Module's Variables never keep a tracer. A Module
holding an unhashable static value goes through each transform as in flax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]

MODES = {
    "tree mode": {"graph": False},
    "graph mode without graph updates": {"graph": True, "graph_updates": False},
    "graph mode with graph updates": {"graph": True, "graph_updates": True},
}

Step = Callable[[Any, Any], Any]
"""The function given to the transform: ``(model, x) -> a scalar``, reading or writing."""


def _read(m: Any, x: Any) -> Any:
    return m.kernel[...].sum() + x


def _write(m: Any, x: Any) -> Any:
    m.bias[...] = m.bias[...] + x
    return m.kernel[...].sum() + x


def _call(nnx: Any, transform: str, step: Step, model: Any, x: Any, mode: dict[str, bool]) -> Any:
    """``step`` under ``nnx.<transform>`` on ``model`` and ``x``; a scalar comes out."""
    if transform == "jit":
        return nnx.jit(step, **mode)(model, x)
    if transform == "vmap":
        return nnx.vmap(step, in_axes=(None, 0), **mode)(model, jnp.ones(2) * x).sum()
    if transform == "remat":
        return nnx.remat(step, **mode)(model, x)
    if transform == "grad":
        return nnx.grad(step, argnums=1, **mode)(model, x)
    if transform == "shard_map":
        mesh = jax.make_mesh((1,), ("x",))
        return nnx.shard_map(step, mesh=mesh, in_specs=(P(), P()), out_specs=P(), **mode)(model, x)
    if transform == "cond":
        return nnx.cond(True, step, step, model, x, **mode)
    if transform == "switch":
        return nnx.switch(1, [step, step], model, x, **mode)
    if transform == "scan":
        scan = nnx.scan(lambda c, m: (c + step(m, x), None), in_axes=(nnx.Carry, None), length=2, **mode)
        return scan(0.0, model)[0]
    if transform == "fori_loop":
        return nnx.fori_loop(0, 2, lambda i, c: (c[0], c[1] + step(c[0], x)), (model, 0.0), **mode)[1]
    if transform == "while_loop":
        return nnx.while_loop(
            lambda c: c[2] < 2, lambda c: (c[0], c[1] + step(c[0], x), c[2] + 1), (model, 0.0, 0), **mode
        )[1]
    raise AssertionError(f"unknown transform {transform!r}")


TRANSFORMS = ["jit", "vmap", "remat", "grad", "shard_map", "cond", "switch", "scan", "fori_loop", "while_loop"]


# tree mode refuses a Variable held twice before any question of trace levels (test_errors.py)
CASES = [(mode, shared) for mode in MODES for shared in (False, True) if not (shared and mode == "tree mode")]


@pytest.mark.apis(*TRANSFORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("step", [_read, _write], ids=["reading", "writing"])
@pytest.mark.parametrize(
    ("mode", "shared"), CASES, ids=[mode + (", a Variable held twice" if shared else "") for mode, shared in CASES]
)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_module_from_outside_a_raw_jit_is_used_or_refused_and_keeps_no_tracer_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str, shared: bool, step: Step
) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        if shared:
            model.alias = model.kernel
        out = jax.jit(lambda x: _call(nnx, transform, step, model, x, MODES[mode]))(jnp.float32(1.0))
        return out, [type(v.get_raw_value()).__name__ for v in (model.kernel, model.bias)]

    assert_same(flax_nnx, nnx, scenario)


class _Unhashable:
    """A static attribute value that compares by content and has no hash."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


@pytest.mark.apis(*TRANSFORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_module_with_an_unhashable_static_attribute_goes_through_a_transform_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        model.tag = _Unhashable(1)
        return _call(nnx, transform, _read, model, jnp.float32(1.0), MODES[mode])

    assert_same(flax_nnx, nnx, scenario)
