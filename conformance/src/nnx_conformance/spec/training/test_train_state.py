"""Laws of the two training containers against optax applied by hand: ``TrainState.create``
initializes ``tx``'s state on the params at step 0, ``apply_gradients`` is one optax step
(``tx.update`` then ``optax.apply_updates``) that counts itself, and ``apply`` calls the
model merged from the graphdef and the given state; ``ModelAndOptimizer.update(grads)``
is the same step on its model's Params, leaving its other Variables as they were."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_close

pytestmark = pytest.mark.kind("property")

TRANSFORMS = st.sampled_from(sorted(strategies.OPTAX_TRANSFORMS))
STEPS = st.integers(1, 3)


def _gradients(like: Any, seed: int) -> list[np.ndarray]:
    """Drawn float32 gradients, one per leaf of ``like``."""
    return [strategies.layer_input(np.shape(leaf), seed + index) for index, leaf in enumerate(jax.tree.leaves(like))]


def _by_hand(
    tx: optax.GradientTransformation, params: list[Any], gradients: list[list[np.ndarray]]
) -> tuple[list[Any], Any]:
    """The params and optimizer state after one optax step per gradient."""
    state = tx.init(params)
    for grads in gradients:
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


def _assert_leaves(what: str, got: Any, expected: Any) -> None:
    __tracebackhide__ = True
    got, expected = jax.tree.leaves(got), jax.tree.leaves(expected)
    assert len(got) == len(expected), f"{what}: expected {len(expected)} arrays, got {len(got)}"
    for index, (a, b) in enumerate(zip(got, expected)):
        assert_close(f"{what}, array {index}", a, b, atol=1e-7)


@pytest.mark.apis("TrainState")
@given(transform=TRANSFORMS, steps=STEPS, seed=strategies.seeds)
def test_train_state_steps_are_optax_steps_on_its_params(nnx: Any, transform: str, steps: int, seed: int) -> None:
    model = nnx.Sequential(nnx.Linear(3, 2, rngs=nnx.Rngs(seed)), nnx.relu, nnx.Linear(2, 1, rngs=nnx.Rngs(seed + 1)))
    graphdef, params = nnx.split(model, nnx.Param)
    state = nnx.TrainState.create(graphdef, params=params, tx=strategies.OPTAX_TRANSFORMS[transform]())
    plain = [np.asarray(leaf) for leaf in jax.tree.leaves(params)]
    assert int(state.step) == 0, f"TrainState.create starts at step 0, got {state.step}"
    _assert_leaves(
        "TrainState.create's opt_state", state.opt_state, strategies.OPTAX_TRANSFORMS[transform]().init(plain)
    )
    gradients = [_gradients(params, seed + step) for step in range(steps)]
    for grads in gradients:
        state = state.apply_gradients(jax.tree.unflatten(jax.tree.structure(params), grads))
    expected_params, expected_opt_state = _by_hand(strategies.OPTAX_TRANSFORMS[transform](), plain, gradients)
    assert int(state.step) == steps, (
        f"TrainState after {steps} apply_gradients: expected step {steps}, got {state.step}"
    )
    _assert_leaves(f"TrainState's params after {steps} {transform} steps", state.params, expected_params)
    _assert_leaves(f"TrainState's opt_state after {steps} {transform} steps", state.opt_state, expected_opt_state)


@pytest.mark.apis("TrainState")
@given(seed=strategies.seeds)
def test_train_state_apply_calls_the_model_merged_from_the_given_state(nnx: Any, seed: int) -> None:
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(seed))
    graphdef, params = nnx.split(model)
    state = nnx.TrainState.create(graphdef, params=params, tx=optax.sgd(0.1))
    other = jax.tree.unflatten(jax.tree.structure(params), _gradients(params, seed))
    x = strategies.layer_input((4, 3), seed)
    bias, kernel = (np.asarray(leaf, dtype=np.float64) for leaf in jax.tree.leaves(other))
    y, _ = state.apply(other)(x)
    assert_close(
        "TrainState.apply(state)(x), the Linear of that state's kernel and bias",
        y,
        x @ kernel + bias,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.apis("ModelAndOptimizer")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ModelAndOptimizer, in favour of Optimizer
@given(transform=TRANSFORMS, steps=STEPS, seed=strategies.seeds)
def test_model_and_optimizer_update_is_an_optax_step_on_its_model_params(
    nnx: Any, transform: str, steps: int, seed: int
) -> None:
    model = nnx.Sequential(nnx.Linear(3, 2, rngs=nnx.Rngs(seed)), nnx.BatchNorm(2, rngs=nnx.Rngs(seed)))
    params, others = nnx.state(model, nnx.Param), nnx.state(model, nnx.Not(nnx.Param))
    plain = [np.asarray(leaf) for leaf in jax.tree.leaves(params)]
    others_before = [np.asarray(leaf) for leaf in jax.tree.leaves(others)]
    optimizer = nnx.ModelAndOptimizer(model, strategies.OPTAX_TRANSFORMS[transform]())
    assert optimizer.model is model, "ModelAndOptimizer(model, tx).model is model"
    gradients = [_gradients(params, seed + step) for step in range(steps)]
    for grads in gradients:
        optimizer.update(jax.tree.unflatten(jax.tree.structure(params), grads))
    expected_params, _ = _by_hand(strategies.OPTAX_TRANSFORMS[transform](), plain, gradients)
    assert int(optimizer.step[...]) == steps, (
        f"ModelAndOptimizer after {steps} updates: expected step {steps}, got {optimizer.step}"
    )
    _assert_leaves(
        f"the model's Params after {steps} {transform} updates", nnx.state(model, nnx.Param), expected_params
    )
    _assert_leaves("the model's other Variables after the updates", nnx.state(model, nnx.Not(nnx.Param)), others_before)
