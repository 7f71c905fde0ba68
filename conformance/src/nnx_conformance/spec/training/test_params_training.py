"""The training classes' keywords that the other tests leave at their defaults: EMA's
and Optimizer's ``graph``, ModelAndOptimizer's ``wrt``, and TrainState built field by
field. Each drawn training step runs on flax.nnx and the implementation and is compared
state for state, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), IN_GRAPH_MODE]


def _model(nnx: Any, seed: int) -> Any:
    """A Linear beside a BatchStat that scales its output: two Variable types to train."""

    class Scaled(nnx.Module):
        def __init__(self) -> None:
            self.linear = nnx.Linear(2, 3, rngs=nnx.Rngs(seed))
            self.scale = nnx.BatchStat(jnp.full((3,), 1.5))

        def __call__(self, x: Any) -> Any:
            return self.linear(x) * self.scale[...]

    return Scaled()


def _loss(model: Any, x: Any) -> Any:
    return jnp.sum(model(x) ** 2)


@pytest.mark.area("training/ema")
@pytest.mark.apis("EMA")
@settings(max_examples=3)
@given(graph=st.booleans(), decay=st.sampled_from([0.5, 0.9]), seed=strategies.seeds)
def test_ema_in_either_mode_acts_as_in_flax(nnx: Any, flax_nnx: Any, graph: bool, decay: float, seed: int) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        ema = nnx.EMA(model, decay, only=nnx.Param, graph=graph)
        model.linear.kernel[...] += 1.0
        ema.update(model)
        return ema, model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("Optimizer", "ModelAndOptimizer")
@settings(max_examples=3)
@given(graph=st.booleans(), wrt=st.sampled_from(["Param", "BatchStat"]), seed=strategies.seeds)
def test_optimizers_over_a_chosen_variable_type_act_as_in_flax(
    nnx: Any, flax_nnx: Any, graph: bool, wrt: str, seed: int
) -> None:
    x = strategies.layer_input((4, 2), seed)

    def scenario(nnx: Any) -> Any:
        trained = getattr(nnx, wrt)
        model, paired = _model(nnx, seed), _model(nnx, seed)
        optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=trained, graph=graph)
        model_and_optimizer = nnx.ModelAndOptimizer(paired, optax.adam(0.1), wrt=trained)
        by_type = nnx.DiffState(0, trained)
        optimizer.update(model, nnx.grad(_loss, argnums=by_type)(model, x))
        model_and_optimizer.update(nnx.grad(_loss, argnums=by_type)(paired, x))
        return model, optimizer.opt_state, paired, model_and_optimizer.opt_state

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.area("training/train_state")
@pytest.mark.apis("TrainState")
@settings(max_examples=3)
@given(step=st.integers(0, 5), seed=strategies.seeds)
def test_a_train_state_built_field_by_field_acts_as_in_flax(nnx: Any, flax_nnx: Any, step: int, seed: int) -> None:
    x = strategies.layer_input((4, 2), seed)

    def scenario(nnx: Any) -> Any:
        graphdef, params, rest = nnx.split(_model(nnx, seed), nnx.Param, ...)
        tx = optax.sgd(0.1, momentum=0.9)
        state = nnx.TrainState(
            graphdef=graphdef, params=params, opt_state=tx.init(params), step=jnp.asarray(step), tx=tx
        )

        def loss(params: Any) -> Any:
            return _loss(nnx.merge(graphdef, params, rest), x)

        for _ in range(2):
            state = state.apply_gradients(grads=jax.grad(loss)(state.params))
        return state.params, state.opt_state, state.step

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.area("training/train_state")
@pytest.mark.apis("TrainState")
@settings(max_examples=2)
@given(seed=strategies.seeds)
def test_a_created_train_state_counts_its_steps_as_flax_does(nnx: Any, flax_nnx: Any, seed: int) -> None:
    def scenario(nnx: Any) -> Any:
        graphdef, params = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)))
        state = nnx.TrainState.create(graphdef=graphdef, params=params, tx=optax.sgd(0.1))
        steps = [state.step]
        for _ in range(2):
            state = state.apply_gradients(grads=jax.tree.map(jnp.ones_like, state.params))
            steps.append(state.step)
        return steps, state.params

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
