"""Parity of transformed functions called later with flax.nnx: a lifted transform keeps
the graph mode and graph updates that were in force when it was made (``scan`` when it
was given its function), whatever ``set_graph_mode`` / ``set_graph_updates`` say at the
call; and a jitted function called again with another number of arguments computes
with all of them, whatever an implementation keeps between calls."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
def test_a_jitted_call_with_another_argument_count_uses_every_argument(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        def forward(model: Any, scale: Any = None) -> Any:
            y = model(jnp.ones(2))
            return y if scale is None else y * scale

        jitted = nnx.jit(forward)
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        return [jitted(model), jitted(model, jnp.array(3.0)), jitted(model)]

    assert_same(flax_nnx, nnx, scenario)


def _shared(nnx: Any) -> Any:
    """A Module whose two attributes hold one Param: graph mode takes it, tree mode refuses it."""

    class Shared(nnx.Module):
        def __init__(self) -> None:
            self.a = nnx.Param(jnp.arange(2.0))
            self.b = self.a

    return Shared()


def _custom_vjp(nnx: Any) -> Any:
    @nnx.custom_vjp
    def f(m: Any, x: Any) -> Any:
        return (m.a[...] * x).sum()

    f.defvjp(lambda m, x: (f(m, x), (m, x)), lambda res, g: (res[0], g * res[1]))
    return f


MADE: dict[str, Callable[[Any], Callable[[Any], Any]]] = {
    "jit": lambda nnx: nnx.jit(lambda m: m),
    "grad": lambda nnx: nnx.grad(lambda m: (m.a[...] ** 2).sum()),
    "value_and_grad": lambda nnx: nnx.value_and_grad(lambda m: ((m.a[...] ** 2).sum(), m), has_aux=True),
    "vmap": lambda nnx: nnx.vmap(lambda m, x: (m, x), in_axes=(None, 0), out_axes=(None, 0)),
    "pmap": lambda nnx: nnx.pmap(lambda m, x: (m, x), in_axes=(None, 0), out_axes=(None, 0)),
    "remat": lambda nnx: nnx.remat(lambda m: m),
    "scan": lambda nnx: nnx.scan(lambda m, x: (m, x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0)),
    "checkify": lambda nnx: nnx.checkify(lambda m: m),
    "shard_map": lambda nnx: nnx.shard_map(
        lambda m: m, mesh=jax.make_mesh((1,), ("d",)), in_specs=jax.P(), out_specs=jax.P()
    ),
    "custom_vjp": _custom_vjp,
}
"""Each transform, made: called on a Module it returns (or the Module and an array to map)."""

CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "vmap": lambda t, m: t(m, jnp.ones((1, 2))),
    "pmap": lambda t, m: t(m, jnp.ones((1, 2))),
    "scan": lambda t, m: t(m, jnp.ones((1, 2))),
    "custom_vjp": lambda t, m: t(m, jnp.ones(2)),
}


@pytest.mark.apis("set_graph_mode", "set_graph_updates", *MADE)
@pytest.mark.documented(None)
@pytest.mark.parametrize("setter", ["set_graph_mode", "set_graph_updates"])
@pytest.mark.parametrize("made_in", [True, False], ids=["made on", "made off"])
@pytest.mark.parametrize("transform", sorted(MADE))
def test_a_transform_keeps_the_mode_it_was_made_in(
    nnx: Any, flax_nnx: Any, transform: str, made_in: bool, setter: str
) -> None:
    def scenario(nnx: Any) -> Any:
        with getattr(nnx, setter)(made_in):
            made = MADE[transform](nnx)
        model = _shared(nnx)
        with getattr(nnx, setter)(not made_in):
            out = CALLS.get(transform, lambda t, m: t(m))(made, model)
        return out, [x is model for x in jax.tree.leaves(out, is_leaf=lambda x: x is model)]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("scan", "set_graph_mode")
@pytest.mark.documented(None)
@pytest.mark.parametrize("given_in", [True, False], ids=["function given in graph mode", "function given in tree mode"])
def test_scan_keeps_the_mode_it_was_given_its_function_in(nnx: Any, flax_nnx: Any, given_in: bool) -> None:
    def scenario(nnx: Any) -> Any:
        with nnx.set_graph_mode(not given_in):
            decorator = nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
        with nnx.set_graph_mode(given_in):
            made = decorator(lambda m, x: (m, x))
        model = _shared(nnx)
        with nnx.set_graph_mode(not given_in):
            return made(model, jnp.ones((1, 2)))[0] is model

    assert_same(flax_nnx, nnx, scenario)
