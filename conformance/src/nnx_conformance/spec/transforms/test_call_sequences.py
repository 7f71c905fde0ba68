"""Parity of transformed functions called later with flax.nnx: a lifted transform keeps
the graph mode and graph updates that were in force when it was made (``scan`` when it
was given its function), whatever ``set_graph_mode`` / ``set_graph_updates`` say at the
call; and a jitted function called again with another number of arguments computes
with all of them, whatever an implementation keeps between calls."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

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


STRUCTURAL_CHANGES: dict[str, Callable[[Any, Any], None]] = {
    "a Variable replaced by assignment": lambda n, m: setattr(m, "kernel", n.Param(jnp.full((2, 2), 3.0))),
    "an attribute added": lambda n, m: setattr(m, "extra", n.Param(jnp.full((2,), 5.0))),
    "an attribute deleted": lambda n, m: delattr(m, "extra"),
    "a list appended to": lambda n, m: m.items.append(n.Param(jnp.full((2,), 7.0))),
    "two Variables swapped": lambda n, m: setattr(m, "items", n.List([m.items[1], m.items[0]])),
    "a Variable's metadata set": lambda n, m: m.kernel.set_metadata("scale", 2.0),
}


@pytest.mark.apis("jit", "Module", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("change", sorted(STRUCTURAL_CHANGES))
def test_a_jitted_function_sees_a_change_to_its_model_between_calls(
    nnx: Any, flax_nnx: Any, change: str, graph: bool
) -> None:
    """Called twice on one model, then once more after the model's structure changed: the
    last call computes with the model as it is then, as a call on a new model would."""

    def scenario(n: Any) -> Any:
        model = n.Dict(
            kernel=n.Param(jnp.ones((2, 2))),
            extra=n.Param(jnp.ones(2)),
            items=n.List([n.Param(jnp.full((2,), 2.0)), n.Param(jnp.full((2,), 4.0))]),
        )

        def total(m: Any) -> Any:
            params = [v for v in vars(m).values() if isinstance(v, n.Param)] + list(m.items)
            weights = [jnp.sum(p[...]) * (i + 1) for i, p in enumerate(params)]
            return sum(weights) * m.kernel.get_metadata().get("scale", 1.0)

        jitted = n.jit(total, graph=graph)
        before = [jitted(model), jitted(model)]
        STRUCTURAL_CHANGES[change](n, model)
        return before, jitted(model)

    assert_same(flax_nnx, nnx, scenario)


SHARING: dict[str, Callable[[Any], tuple[Any, Any]]] = {
    "one model passed twice": lambda n: (model := n.Linear(2, 2, rngs=n.Rngs(0)), model),
    "a model and a List holding it": lambda n: (model := n.Linear(2, 2, rngs=n.Rngs(0)), n.List([model])),
    "a model holding one Param twice": lambda n: (_shared(n), n.Linear(2, 2, rngs=n.Rngs(0))),
}


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph_updates", [True, False], ids=["with graph updates", "without graph updates"])
@pytest.mark.parametrize("sharing", sorted(SHARING))
def test_graph_mode_calls_on_arguments_sharing_a_node_agree_with_flax_call_after_call(
    nnx: Any, flax_nnx: Any, sharing: str, graph_updates: bool
) -> None:
    """Calls again and again on arguments that reach one node twice: each gives flax's
    result, and none costs the thread recursion levels flax's call keeps (enough of such
    calls would end the program in a RecursionError)."""

    def scenario(n: Any) -> Any:
        first, second = SHARING[sharing](n)
        leaves = n.jit(lambda a, b: jax.tree.leaves(n.state((a, b))), graph=True, graph_updates=graph_updates)
        return [leaves(first, second) for _ in range(4)]

    assert_same(flax_nnx, nnx, scenario, what=f"four calls on {sharing}")


class _Doubler:
    """A callable that cannot be hashed (it defines equality only)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Doubler)

    __hash__ = None  # type: ignore[assignment]

    def __call__(self, x: Any) -> Any:
        return x * 2 + 1


CALLABLES: dict[str, Callable[[Any, Any], Any]] = {
    "cond with builtins": lambda n, x: n.cond(True, operator.neg, operator.pos, x),
    "cond with unhashable callables": lambda n, x: n.cond(False, _Doubler(), _Doubler(), x),
    "switch": lambda n, x: n.switch(1, [operator.neg, _Doubler()], x),
    "while_loop": lambda n, x: n.while_loop(lambda v: v[0] < 5, _Doubler(), x),
    "fori_loop": lambda n, x: n.fori_loop(0, 3, lambda i, v: operator.neg(v), x),
    "scan": lambda n, x: n.scan(_Doubler(), in_axes=0, out_axes=0)(x),
    "remat": lambda n, x: n.remat(_Doubler())(x),
}


@pytest.mark.apis("cond", "switch", "while_loop", "fori_loop", "scan", "remat")
@pytest.mark.parametrize("call", sorted(CALLABLES))
def test_transforms_take_builtins_and_unhashable_callables_as_flax(nnx: Any, flax_nnx: Any, call: str) -> None:
    """Functions that cannot be weakly referenced (builtins) or hashed run as any other."""
    assert_same(flax_nnx, nnx, lambda n: [CALLABLES[call](n, jnp.arange(3.0)) for _ in range(2)])
