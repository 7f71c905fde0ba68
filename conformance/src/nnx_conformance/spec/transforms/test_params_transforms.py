"""The transforms' keywords that the other tests leave at their defaults: jit's and
jit_partial's static, donated and unused arguments, shardings and inlining,
cached_partial's modes, the differentiation transforms' auxiliary outputs, integer and
complex inputs, scan's direction and unrolling, fori_loop's unrolling, remat's policy,
make_jaxpr's static arguments, checkify's error sets. Each drawn call runs on a drawn
Linear with flax.nnx and the implementation and is compared result for result and state
for state, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.experimental import checkify
from jax.sharding import NamedSharding, PartitionSpec

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


def _linear(nnx: Any, seed: int) -> Any:
    return nnx.Linear(3, 3, rngs=nnx.Rngs(seed))


@pytest.mark.apis("jit")
@settings(max_examples=4)
@given(scale=st.sampled_from([1, 2]), keep_unused=st.booleans(), inline=st.booleans(), seed=strategies.seeds)
def test_jit_static_donated_and_unused_arguments_act_as_in_flax(
    nnx: Any, flax_nnx: Any, scale: int, keep_unused: bool, inline: bool, seed: int
) -> None:
    x = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any, unused: Any, scale: int, *, offset: float) -> Any:
            model.bias[...] += offset
            return model(x) * scale

        compiled = nnx.jit(
            step,
            static_argnums=3,
            static_argnames="offset",
            donate_argnums=(1, 2),
            keep_unused=keep_unused,
            inline=inline,
        )
        donated = [(jnp.array(x), jnp.zeros(2)) for _ in range(2)]
        outputs = [compiled(model, *arrays, scale, offset=0.5) for arrays in donated]
        deleted = [[array.is_deleted() for array in arrays] for arrays in donated]
        return outputs, deleted, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("grad", "value_and_grad", "vjp", "jvp")
@settings(max_examples=4)
@given(seed=strategies.seeds)
def test_differentiation_with_auxiliary_outputs_acts_as_in_flax(nnx: Any, flax_nnx: Any, seed: int) -> None:
    x = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def loss(model: Any, x: Any) -> Any:
            y = model(x)
            return jnp.sum(y**2), y

        value_and_grads = nnx.value_and_grad(loss, has_aux=True)(model, x)
        _, pullback, aux = nnx.vjp(loss, model, x, has_aux=True, graph_updates=False)
        tangents = nnx.jvp(lambda x: loss(model, x), (x,), (jnp.ones_like(x),), has_aux=True, graph_updates=False)
        return value_and_grads, pullback(jnp.ones(())), aux, tangents, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@settings(max_examples=3)
@given(seed=strategies.seeds)
def test_differentiation_over_integer_and_complex_inputs_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, seed: int
) -> None:
    x = strategies.layer_input((3,), seed)

    def scenario(nnx: Any) -> Any:
        differentiate = getattr(nnx, transform)
        by_int = differentiate(lambda x, n: jnp.sum(x * n), argnums=(0, 1), allow_int=True)(x, jnp.arange(3))
        by_complex = differentiate(lambda z: jnp.sum(z * z), holomorphic=True)(x.astype(jnp.complex64) * (1 + 1j))
        return by_int, by_complex

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("scan", "fori_loop")
@settings(max_examples=4)
@given(reverse=st.booleans(), unroll=st.sampled_from([2, 3]), seed=strategies.seeds)
def test_scan_direction_and_unrolling_act_as_in_flax(
    nnx: Any, flax_nnx: Any, reverse: bool, unroll: int, seed: int
) -> None:
    xs = strategies.layer_input((4, 2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, carry: Any, x: Any) -> Any:
            model.bias[...] += 1.0
            y = model(x + carry)
            return y, jnp.sum(y)

        scanned = nnx.scan(step, in_axes=(None, nnx.Carry, 0), out_axes=(nnx.Carry, 0), reverse=reverse, unroll=unroll)
        carry, ys = scanned(model, jnp.zeros((2, 3)), xs)

        def body(i: Any, model: Any) -> Any:
            model.bias[...] += i
            return model

        nnx.fori_loop(0, 3, body, model, unroll=unroll)
        return carry, ys, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("remat", "make_jaxpr")
@settings(max_examples=3)
@given(prevent_cse=st.booleans(), seed=strategies.seeds)
def test_remat_policy_and_make_jaxpr_static_arguments_act_as_in_flax(
    nnx: Any, flax_nnx: Any, prevent_cse: bool, seed: int
) -> None:
    x = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)
        forward = nnx.remat(
            lambda model, x: jnp.sin(model(x)), prevent_cse=prevent_cse, policy=jax.checkpoint_policies.nothing_saveable
        )
        grads = nnx.grad(lambda model: jnp.sum(forward(model, x)))(model)
        jaxpr = nnx.make_jaxpr(lambda x, power: x**power, static_argnums=1, graph_updates=False)(x, 3)
        return grads, [str(v.aval) for v in jaxpr.jaxpr.outvars], model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit_partial")
@settings(max_examples=4)
@given(
    scale=st.sampled_from([1, 2]),
    keep_unused=st.booleans(),
    inline=st.booleans(),
    by_name=st.booleans(),
    sharded=st.booleans(),
    seed=strategies.seeds,
)
def test_jit_partial_static_donated_and_sharded_arguments_act_as_in_flax(
    nnx: Any, flax_nnx: Any, scale: int, keep_unused: bool, inline: bool, by_name: bool, sharded: bool, seed: int
) -> None:
    x = strategies.layer_input((2, 3), seed)
    donated = {"donate_argnames": "unused"} if by_name else {"donate_argnums": 2}
    replicated = NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())
    # jax.jit takes no keyword arguments with in_shardings: offset is then left at its default
    shardings = {"in_shardings": replicated, "out_shardings": replicated} if sharded else {}
    keywords = {} if sharded else {"offset": 0.25}

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any, unused: Any, scale: int, offset: float = 0.5) -> Any:
            model.bias[...] += offset
            return model(x) * scale

        compiled = nnx.jit_partial(
            step,
            model,
            static_argnums=3,
            static_argnames="offset",
            keep_unused=keep_unused,
            inline=inline,
            graph_updates=False,
            **donated,
            **shardings,
        )
        outputs = [compiled(x, jnp.zeros(2), scale, **keywords) for _ in range(2)]
        return outputs, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("cached_partial", "jit")
@settings(max_examples=3)
@given(seed=strategies.seeds)
def test_cached_partial_in_graph_mode_with_updates_acts_as_in_flax(nnx: Any, flax_nnx: Any, seed: int) -> None:
    x = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any) -> Any:
            model.bias[...] += 1.0
            return model(x)

        compiled = nnx.jit(step, graph=True, graph_updates=True)
        cached = nnx.cached_partial(compiled, model, graph=True, graph_updates=True)
        return [cached(x) for _ in range(2)], model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


ERROR_SETS = {
    "float checks": checkify.float_checks,
    "NaN checks": checkify.nan_checks,
    "division checks": checkify.div_checks,
    "user and division checks": checkify.user_checks | checkify.div_checks,
}
"""Error sets of ``jax.experimental.checkify`` (index checks aside: flax 0.12.12 fails with
"attempt to get argmin of an empty sequence" on them when the function updates a Module)."""


@pytest.mark.apis("checkify")
@pytest.mark.parametrize("errors", ERROR_SETS, ids=list(ERROR_SETS))
@settings(max_examples=3)
@given(position=st.integers(0, 5), zero_row=st.booleans(), seed=strategies.seeds)
def test_checkify_reports_the_error_set_it_is_given_as_flax_does(
    nnx: Any, flax_nnx: Any, errors: str, position: int, zero_row: bool, seed: int
) -> None:
    x = strategies.layer_input((2, 3), seed) * (0.0 if zero_row else 1.0)

    def scenario(nnx: Any) -> Any:
        model = _linear(nnx, seed)

        def step(model: Any, x: Any) -> Any:
            model.bias[...] += 1.0
            y = jnp.log(model(x) - model.bias[...]) / jnp.sum(x)
            checkify.check(jnp.all(x != 0), "a zero input")
            return y.ravel()[position] + jnp.sum(x != 0).astype(jnp.int32) // jnp.sum(x == 0).astype(jnp.int32)

        error, y = nnx.checkify(step, errors=ERROR_SETS[errors])(model, x)
        return error.get(), y, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
