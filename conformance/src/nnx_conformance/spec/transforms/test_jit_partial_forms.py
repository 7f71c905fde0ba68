"""Parity of ``nnx.jit_partial`` and ``nnx.jit``'s shardings with flax.nnx: a tuple of
``in_shardings`` whose first entries are the bound arguments', in graph and tree mode, a
Module's bound method (which jit refuses); and what flax refuses: a bound argument's
Variable updated from inside another trace, a Variable's metadata changed inside the
function, a ``StateSharding`` whose filters leave a Variable without a sharding."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = pytest.mark.kind("differential")

MODES = gs.NO_UPDATES_MODE_KEYWORDS


def _replicated() -> NamedSharding:
    return NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())


def _model(nnx: Any) -> Any:
    return nnx.Dict(w=nnx.Param(jnp.arange(3.0)), count=nnx.BatchStat(jnp.array(0)))


def _step(model: Any, x: Any) -> Any:
    model["count"][...] += 1
    return model["w"][...] * x


@pytest.mark.apis("jit_partial")
@pytest.mark.documented("api transforms page: jit_partial docstring (in_shardings)")
@pytest.mark.parametrize("mode", MODES)
def test_jit_partial_with_a_tuple_of_in_shardings_acts_as_in_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        sharded = nnx.jit_partial(
            _step, model, in_shardings=(_replicated(), _replicated()), out_shardings=_replicated(), **MODES[mode]
        )
        return [sharded(jnp.ones(3)) for _ in range(2)], model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_jit_partial_takes_a_bound_method_unlike_jit_as_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        return nnx.jit_partial(layer.__call__, **MODES[mode])(jnp.ones(2)), layer

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_jit_partial_refuses_to_update_its_variables_from_inside_another_trace_as_flax(
    nnx: Any, flax_nnx: Any, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        stepper = nnx.jit_partial(_step, model, **MODES[mode])
        return jax.jit(stepper)(jnp.ones(3)), model

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("Cannot mutate",))
    assert outcome.error is not None, "flax's jit_partial refuses to update its Variables from another trace"


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_jit_partial_refuses_a_variable_metadata_change_as_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)

        def relabel(model: Any) -> Any:
            model["w"].set_metadata(label="changed")
            model["w"][...] += 1
            return model["w"][...]

        return nnx.jit_partial(relabel, model, **MODES[mode])(), model

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("Variable metadata changed inside jit",))
    assert outcome.error is not None, "flax's jit_partial refuses a change of a Variable's metadata"


@pytest.mark.apis("jit", "StateSharding")
@pytest.mark.documented(None)
def test_a_state_sharding_leaving_a_variable_without_a_sharding_is_refused_as_by_flax(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        sharding = nnx.StateSharding({nnx.Param: _replicated()})
        return nnx.jit(_step, in_shardings=(sharding, None), graph=True, graph_updates=True)(model, jnp.ones(3))

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("No axis found for path=('count',)",))
    assert outcome.error is not None, "flax refuses a Variable that no filter of the StateSharding selects"
