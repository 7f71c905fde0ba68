"""Differential tests of training: Optimizer over every optax family, ModelAndOptimizer,
the metrics, EMA and TrainState give flax's results and leave flax's state, bit for bit."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _regression(nnx: Any, seed: int) -> tuple[Any, Any, Any]:
    """A two-layer regression model from ``Rngs(seed)``, a batch and its targets."""
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(seed)), nnx.relu, nnx.Linear(4, 2, rngs=nnx.Rngs(seed + 1)))
    x = strategies.layer_input((5, 3), seed)
    y = strategies.layer_input((5, 2), seed + 2)
    return model, x, y


def _mse(model: Any, x: Any, y: Any) -> Any:
    return jnp.mean((model(x) - y) ** 2)


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("Optimizer")
@given(
    transform=st.sampled_from(sorted(strategies.OPTAX_TRANSFORMS)), seed=st.integers(0, 2**20), steps=st.integers(1, 3)
)
def test_optimizer_steps_leave_the_parameters_and_state_of_flax(
    nnx: Any, flax_nnx: Any, transform: str, seed: int, steps: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model, x, y = _regression(nnx, seed)
        optimizer = nnx.Optimizer(model, strategies.OPTAX_TRANSFORMS[transform](), wrt=nnx.Param)
        updates = [optimizer.update(model, nnx.grad(_mse)(model, x, y)) for _ in range(steps)]
        return updates, nnx.state(model), nnx.state(optimizer)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("Optimizer")
@given(seed=st.integers(0, 2**20), steps=st.integers(1, 2))  # eager lbfgs compiles its line search per step
def test_optimizer_update_passes_grad_value_and_value_fn_to_a_line_search(
    nnx: Any, flax_nnx: Any, seed: int, steps: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model, x, y = _regression(nnx, seed)
        optimizer = nnx.Optimizer(model, optax.lbfgs(), wrt=nnx.Param)
        graphdef, _ = nnx.split(model)

        def value_fn(params: Any) -> Any:
            return _mse(nnx.merge(graphdef, params), x, y)

        for _ in range(steps):
            value, grads = nnx.value_and_grad(_mse)(model, x, y)
            optimizer.update(model, grads, grad=grads, value=value, value_fn=value_fn)
        return nnx.state(model), nnx.state(optimizer)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("Optimizer")
def test_optimizer_state_takes_the_optimizer_sharding_of_its_parameter(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = jax.make_mesh((2,), ("model",), axis_types=(jax.sharding.AxisType.Explicit,), devices=jax.devices()[:2])
        with jax.set_mesh(mesh):
            metadata = {"sharding_names": (None, "model"), "optimizer_sharding": (None, None)}
            model = nnx.Linear(2, 4, kernel_metadata=metadata, rngs=nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
            states = nnx.to_flat_state(nnx.state(optimizer, nnx.OptState))
            return nnx.state(optimizer), [str(variable.get_value().sharding.spec) for _, variable in states]

    if len(jax.devices()) < 2:
        pytest.skip("the sharding of optimizer state needs two devices")
    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("ModelAndOptimizer")
@given(seed=st.integers(0, 2**20))
def test_model_and_optimizer_updates_its_model_as_flax(nnx: Any, flax_nnx: Any, seed: int) -> None:
    def scenario(nnx: Any) -> Any:
        model, x, y = _regression(nnx, seed)
        optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
        optimizer.update(nnx.grad(_mse)(model, x, y))
        return nnx.state(model), nnx.state(optimizer)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/metrics")
@pytest.mark.apis("metrics")
@given(
    batches=st.lists(st.integers(0, 2**20), min_size=1, max_size=3),
    masked=st.booleans(),
    label_dtype=st.sampled_from(["int32", "int64"]),
)
def test_metrics_accumulate_as_flax(
    nnx: Any, flax_nnx: Any, batches: list[int], masked: bool, label_dtype: str
) -> None:
    def scenario(nnx: Any) -> Any:
        metrics = nnx.MultiMetric(
            accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"), spread=nnx.metrics.Welford("loss")
        )
        binary = nnx.metrics.Accuracy(threshold=0.5)
        computed = []
        for seed in batches:
            rng = np.random.default_rng(seed)
            logits = rng.standard_normal((6, 3), dtype=np.float32)
            labels = jnp.asarray(rng.integers(0, 3, 6), dtype=label_dtype)
            loss = rng.standard_normal(6, dtype=np.float32)
            mask = {"mask": rng.integers(0, 2, 6).astype(bool)} if masked else {}
            metrics.accuracy.update(logits=logits, labels=labels, **mask)
            metrics.loss.update(loss=loss, **mask)
            metrics.spread.update(loss=loss)
            binary.update(logits=logits[:, 0], labels=labels % 2)
            computed.append((metrics.compute(), binary.compute()))
        metrics.reset()
        return computed, nnx.state(metrics), nnx.state(binary), metrics.compute()["loss"]

    with jax.enable_x64(label_dtype == "int64"):
        assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/metrics")
@pytest.mark.apis("metrics")
@given(values_shape=st.sampled_from([(), (2,), (2, 3)]), mask_shape=st.sampled_from([(), (2,), (3,), (2, 1)]))
def test_average_with_a_mask_counts_or_rejects_as_flax(
    nnx: Any, flax_nnx: Any, values_shape: tuple[int, ...], mask_shape: tuple[int, ...]
) -> None:
    def scenario(nnx: Any) -> Any:
        average = nnx.metrics.Average()
        average.update(
            values=jnp.arange(np.prod(values_shape), dtype=jnp.float32).reshape(values_shape),
            mask=jnp.ones(mask_shape, bool),
        )
        return average.compute(), nnx.state(average)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/ema")
@pytest.mark.apis("EMA")
@given(seed=st.integers(0, 2**20), decay=st.sampled_from([0.5, 0.9, 0.999]), steps=st.integers(1, 3))
def test_ema_tracks_the_parameters_as_flax(nnx: Any, flax_nnx: Any, seed: int, decay: float, steps: int) -> None:
    def scenario(nnx: Any) -> Any:
        model, x, y = _regression(nnx, seed)
        ema = nnx.EMA(model, decay=decay)
        optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
        for _ in range(steps):
            optimizer.update(model, nnx.grad(_mse)(model, x, y))
            ema.update(model)
        return nnx.state(ema), nnx.state(model)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.area("training/train_state")
@pytest.mark.apis("TrainState")
@given(seed=st.integers(0, 2**20), steps=st.integers(1, 2))
def test_a_train_state_subclass_with_extra_fields_trains_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, steps: int
) -> None:
    def scenario(nnx: Any) -> Any:
        class WithBatchStats(nnx.TrainState):
            batch_stats: Any

        model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(seed)), nnx.BatchNorm(4, rngs=nnx.Rngs(seed)))
        graphdef, params, batch_stats = nnx.split(model, nnx.Param, nnx.BatchStat)
        state = WithBatchStats.create(graphdef, params=params, tx=optax.adam(0.1), batch_stats=batch_stats)
        x = strategies.layer_input((5, 3), seed)

        def loss(params: Any, batch_stats: Any) -> Any:
            model = nnx.merge(state.graphdef, params, batch_stats, copy=True)
            return jnp.mean(model(x) ** 2), nnx.state(model, nnx.BatchStat)

        for _ in range(steps):
            grads, updates = jax.grad(loss, has_aux=True)(state.params, state.batch_stats)
            state = state.apply_gradients(grads, batch_stats=updates)
        return (
            type(state).__name__,
            state.params,
            state.batch_stats,
            state.step,
            isinstance(state.step, jax.Array),
            jax.tree.leaves(state.opt_state),
        )

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to train the TrainState subclass: {outcome.error!r}"


@pytest.mark.apis("TrainState")
@pytest.mark.documented(None)
@given(steps=st.integers(0, 2))
def test_a_train_state_is_the_pytree_flax_makes_of_it(nnx: Any, flax_nnx: Any, steps: int) -> None:
    """Its leaves are the step, the parameters, the optimizer state and a subclass's data
    fields (unmarked, or marked ``pytree_node=True``); the graphdef, tx and fields marked
    ``pytree_node=False`` (as ``flax.struct.field`` marks them) are its structure, so a
    jitted function takes it whole."""

    def scenario(nnx: Any) -> Any:
        class Tagged(nnx.TrainState):
            note: Any = dataclasses.field(default=None)
            score: Any = dataclasses.field(default=None, metadata={"pytree_node": True})
            label: str = dataclasses.field(default="run", metadata={"pytree_node": False})

        graphdef, params = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        state = Tagged.create(graphdef, params=params, tx=optax.sgd(0.1), note=jnp.zeros(1), score=jnp.ones(1))
        for _ in range(steps):
            state = state.apply_gradients(grads=jax.tree.map(jnp.ones_like, state.params))
        leaves = jax.tree_util.tree_flatten_with_path(state)[0]
        return [jax.tree_util.keystr(path) for path, _ in leaves], jax.jit(lambda s: s.step + 1)(state)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to build or step the TrainState subclass: {outcome.error!r}"
