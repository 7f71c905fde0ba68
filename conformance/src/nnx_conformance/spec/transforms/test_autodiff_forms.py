"""Parity of the differentiation transforms' less common forms with flax.nnx:
``value_and_grad``'s auxiliary output without graph updates, ``custom_vjp`` in tree
mode, the decorator forms of ``remat`` and ``make_jaxpr``, a ``functools.partial`` of a
function; and what flax refuses: a repeated argnum, a bound method (also inside a
``functools.partial``) given to ``vjp``, ``jvp``, ``make_jaxpr`` or ``jit``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = pytest.mark.kind("differential")

CUSTOM_VJP_DOC = "api transforms page: custom_vjp docstring (bwd returns the tangents of the arguments)"

MODES: dict[str, dict[str, bool]] = {
    "graph mode with graph updates": {"graph": True, "graph_updates": True},
    "graph mode without graph updates": {"graph": True, "graph_updates": False},
    "tree mode": {"graph": False, "graph_updates": False},  # make_jaxpr refuses graph updates even in tree mode
}
NO_UPDATES = {name: mode for name, mode in MODES.items() if name != "graph mode with graph updates"}


def _model(nnx: Any) -> Any:
    return nnx.Dict(w=nnx.Param(jnp.arange(3.0)), calls=nnx.BatchStat(jnp.array(0.0)))


def _loss_with_aux(model: Any, x: Any) -> Any:
    model["calls"][...] += 1.0
    y = model["w"][...] * x
    return jnp.sum(y**2), {"y": y}


@pytest.mark.apis("value_and_grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_with_an_auxiliary_output_acts_as_in_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        (loss, aux), grads = nnx.value_and_grad(_loss_with_aux, has_aux=True, **MODES[mode])(model, jnp.ones(3))
        return loss, aux, grads, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_a_repeated_argnum_is_refused_with_graph_updates_as_by_flax(nnx: Any, flax_nnx: Any, transform: str) -> None:
    # without graph updates flax 0.12.12 fails inside (TypeError: 'NoneType' object is not subscriptable)
    def scenario(nnx: Any) -> Any:
        loss = lambda model: jnp.sum(model["w"][...])  # noqa: E731
        transformed = getattr(nnx, transform)(loss, argnums=(0, 0), graph=True, graph_updates=True)
        return transformed(_model(nnx))

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("argnum 0 is repeated in argnums",))
    assert outcome.error is not None, f"flax's {transform} refuses a repeated argnum"


@pytest.mark.apis("custom_vjp")
@pytest.mark.documented(None)
def test_custom_vjp_with_repeated_nondiff_argnums_is_refused_as_by_flax(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        return nnx.custom_vjp(lambda n, x: x * n, nondiff_argnums=(0, 0), graph=True, graph_updates=True)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("argnum 0 is repeated in nondiff_argnums",))
    assert outcome.error is not None, "flax's custom_vjp refuses a repeated nondiff argnum"


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(None)
def test_custom_vjp_in_tree_mode_gives_bwd_tangents_and_updates_as_in_flax(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(nondiff_argnums=(0,), graph=False)
        def f(scale: float, model: Any, x: Any) -> Any:
            model["calls"][...] += 1.0
            return jnp.sum(jnp.sin(model["w"][...]) * x) * scale

        def fwd(scale: float, model: Any, x: Any) -> Any:
            return f(scale, model, x), (jnp.cos(model["w"][...]), x, model)

        def bwd(scale: float, residual: Any, g: Any) -> Any:
            cos_w, x, model = residual
            model_g = jax.tree.map(jnp.zeros_like, model)
            model_g["w"][...] = cos_w * x * g * scale
            return model_g, jnp.full_like(x, g)

        f.defvjp(fwd, bwd)
        model = _model(nnx)
        grads = nnx.grad(lambda model, x: f(2.0, model, x), argnums=(0, 1), graph=False)(model, jnp.ones(3))
        return grads, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(CUSTOM_VJP_DOC)
@pytest.mark.parametrize("tangent", ["the Module", "an array"])
def test_custom_vjp_with_graph_updates_refuses_a_modules_tangent_that_is_no_state_as_flax(
    nnx: Any, flax_nnx: Any, tangent: str
) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(graph=True, graph_updates=True)
        def f(model: Any) -> Any:
            return jnp.sum(model["w"][...] ** 2)

        def fwd(model: Any) -> Any:
            return f(model), model

        def bwd(model: Any, g: Any) -> Any:
            return (model if tangent == "the Module" else jnp.ones(3),)

        f.defvjp(fwd, bwd)
        return nnx.grad(f, graph=True, graph_updates=True)(_model(nnx))

    mentions = {
        "the Module": "Expected State or Variable",
        "an array": "must produce an output with the same type as the args tuple",
    }
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mentions[tangent],))
    assert outcome.error is not None, f"flax refuses {tangent} as the tangent of a Module"


@pytest.mark.apis("remat", "make_jaxpr", "jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", NO_UPDATES)
def test_decorator_forms_and_partial_functions_act_as_in_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        rematted = nnx.remat(prevent_cse=False, **MODES[mode])(lambda m, x: _loss_with_aux(m, x)[0])
        jaxpr = nnx.make_jaxpr(**MODES[mode])(lambda x: x * 2)(jnp.ones(2))
        scaled = functools.partial(lambda k, x: x * k, 3.0)
        return (
            rematted(model, jnp.ones(3)),
            [str(v.aval) for v in jaxpr.jaxpr.outvars],
            nnx.jit(scaled, **MODES[mode])(jnp.ones(2)),
            model,
        )

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("vmap")
@pytest.mark.documented(None)
@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "by keyword"])
@pytest.mark.parametrize("mode", MODES)
def test_vmap_of_a_partial_function_takes_its_arguments_as_flax(
    nnx: Any, flax_nnx: Any, mode: str, by_keyword: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        mapped = nnx.vmap(functools.partial(lambda k, x: x * k, 3.0), in_axes=0, **MODES[mode])
        return mapped(x=jnp.ones((2, 3))) if by_keyword else mapped(jnp.ones((2, 3)))

    assert_same(flax_nnx, nnx, scenario)


def _bound_method(nnx: Any, wrapped: bool) -> Callable[..., Any]:
    """A bound method of a Module, plain or in a ``functools.partial``."""
    layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    return functools.partial(layer.__call__) if wrapped else layer.__call__


BOUND: dict[str, Callable[[Any, Callable[..., Any], dict[str, bool]], Any]] = {
    "vjp": lambda nnx, f, mode: nnx.vjp(f, jnp.ones(2), **mode),
    "jvp": lambda nnx, f, mode: nnx.jvp(f, (jnp.ones(2),), (jnp.ones(2),), **mode),
    "make_jaxpr": lambda nnx, f, mode: nnx.make_jaxpr(f, **mode)(jnp.ones(2)),
    "jit": lambda nnx, f, mode: nnx.jit(f, **mode)(jnp.ones(2)),
}


@pytest.mark.apis(*BOUND)
@pytest.mark.documented(None)
@pytest.mark.parametrize("wrapped", [False, True], ids=["bound method", "bound method in a partial"])
@pytest.mark.parametrize("mode", NO_UPDATES)
@pytest.mark.parametrize("transform", BOUND)
def test_a_bound_method_is_refused_as_by_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str, wrapped: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        return BOUND[transform](nnx, _bound_method(nnx, wrapped), MODES[mode])

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(f"nnx.{transform} does not support bound methods",))
    assert outcome.error is not None, f"flax's {transform} refuses a bound method"
