"""Laws of the training utilities: an Optimizer step is the Optax update applied by
hand, metrics equal the NumPy statistics of everything they were given, and EMA
follows its documented recurrence."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.kind("property")

OPTIMIZERS = {
    "sgd": lambda lr: optax.sgd(lr),
    "sgd-momentum": lambda lr: optax.sgd(lr, momentum=0.9),
    "adam": lambda lr: optax.adam(lr),
    "adamw": lambda lr: optax.adamw(lr),
    "rmsprop": lambda lr: optax.rmsprop(lr),
}
"""Optax transformations with stateless and stateful (namedtuple) optimizer states."""

vectors = st.lists(st.integers(-8, 8), min_size=1, max_size=5).map(lambda v: np.array(v, np.float32))
"""A small float32 vector of integer values."""


def _model(nnx: Any, kernel: np.ndarray, bias: np.ndarray) -> Any:
    """A model with two Params and a BatchStat that an optimizer over Params must not touch."""

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.kernel = nnx.Param(jnp.asarray(kernel))
            self.bias = nnx.Param(jnp.asarray(bias))
            self.stat = nnx.BatchStat(jnp.asarray(bias) + 1)

    return Model()


def _close(actual: Any, expected: Any) -> bool:
    return bool(np.allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5, atol=1e-6))


@pytest.mark.area("training/optimizer")
@pytest.mark.apis("Optimizer")
@given(
    name=st.sampled_from(sorted(OPTIMIZERS)),
    lr=st.sampled_from([0.1, 0.01]),
    kernel=vectors,
    data=st.data(),
)
def test_an_optimizer_step_equals_the_optax_update_applied_by_hand(
    nnx: Any, name: str, lr: float, kernel: np.ndarray, data: st.DataObject
) -> None:
    bias = data.draw(vectors, label="bias")
    steps = data.draw(st.lists(st.tuples(vectors, vectors), min_size=1, max_size=3), label="grads")
    tx = OPTIMIZERS[name](lr)
    model = _model(nnx, kernel, bias)
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)

    params = {"bias": jnp.asarray(bias), "kernel": jnp.asarray(kernel)}
    opt_state = tx.init(params)
    for i, (gk, gb) in enumerate(steps):
        gk = np.resize(gk, kernel.shape).astype(np.float32)
        gb = np.resize(gb, bias.shape).astype(np.float32)
        grads = nnx.State({"kernel": nnx.Param(jnp.asarray(gk)), "bias": nnx.Param(jnp.asarray(gb))})
        optimizer.update(model, grads)
        updates, opt_state = tx.update({"bias": jnp.asarray(gb), "kernel": jnp.asarray(gk)}, opt_state, params)
        params = optax.apply_updates(params, updates)
        assert _close(model.kernel[...], params["kernel"]), (
            f"{name} step {i + 1}: expected kernel {params['kernel']}, got {model.kernel[...]}"
        )
        assert _close(model.bias[...], params["bias"]), (
            f"{name} step {i + 1}: expected bias {params['bias']}, got {model.bias[...]}"
        )
    assert int(optimizer.step[...]) == len(steps), (
        f"expected step == {len(steps)} after {len(steps)} updates, got {optimizer.step[...]}"
    )
    assert _close(model.stat[...], bias + 1), (
        f"the BatchStat outside wrt=Param should stay {bias + 1}, got {model.stat[...]}"
    )


@pytest.mark.area("training/metrics")
@pytest.mark.apis("metrics")
@given(batches=st.lists(vectors, min_size=1, max_size=4))
def test_average_and_welford_equal_the_numpy_statistics_of_all_batches(nnx: Any, batches: list[np.ndarray]) -> None:
    average, welford = nnx.metrics.Average(), nnx.metrics.Welford()
    for batch in batches:
        average.update(values=jnp.asarray(batch))
        welford.update(values=jnp.asarray(batch))
    values = np.concatenate(batches)
    stats = welford.compute()
    assert _close(average.compute(), values.mean()), f"Average: expected {values.mean()}, got {average.compute()}"
    assert _close(stats.mean, values.mean()), f"Welford mean: expected {values.mean()}, got {stats.mean}"
    assert _close(stats.standard_deviation, values.std()), (
        f"Welford standard_deviation: expected {values.std()}, got {stats.standard_deviation}"
    )
    expected_sem = values.std() / np.sqrt(values.size)
    assert _close(stats.standard_error_of_mean, expected_sem), (
        f"Welford standard_error_of_mean: expected {expected_sem}, got {stats.standard_error_of_mean}"
    )


@pytest.mark.area("training/metrics")
@pytest.mark.apis("metrics")
@given(data=st.data(), batch=vectors)
def test_a_masked_average_counts_only_the_masked_in_values(nnx: Any, data: st.DataObject, batch: np.ndarray) -> None:
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=batch.size, max_size=batch.size), label="mask"))
    average = nnx.metrics.Average()
    average.update(values=jnp.asarray(batch), mask=jnp.asarray(mask))
    expected = batch[mask].mean() if mask.any() else np.nan
    got = np.asarray(average.compute())
    assert (np.isnan(expected) and np.isnan(got)) or _close(got, expected), (
        f"masked Average of {batch} with mask {mask}: expected {expected}, got {got}"
    )


@pytest.mark.area("training/metrics")
@pytest.mark.apis("metrics")
@given(data=st.data(), classes=st.integers(2, 4), size=st.integers(1, 6))
def test_accuracy_is_the_fraction_of_argmax_predictions_equal_to_the_labels(
    nnx: Any, data: st.DataObject, classes: int, size: int
) -> None:
    logits = np.array(
        data.draw(st.lists(st.integers(-8, 8), min_size=size * classes, max_size=size * classes), label="logits"),
        np.float32,
    ).reshape(size, classes)
    labels = np.array(data.draw(st.lists(st.integers(0, classes - 1), min_size=size, max_size=size), label="labels"))
    accuracy = nnx.metrics.Accuracy()
    accuracy.update(logits=jnp.asarray(logits), labels=jnp.asarray(labels, jnp.int32))
    expected = (logits.argmax(-1) == labels).mean()
    assert _close(accuracy.compute(), expected), (
        f"Accuracy of argmax({logits.tolist()}) against {labels.tolist()}: expected {expected}, "
        f"got {accuracy.compute()}"
    )


@pytest.mark.area("training/ema")
@pytest.mark.apis("EMA")
@given(
    decay=st.sampled_from([0.0, 0.5, 0.9]),
    start=vectors,
    data=st.data(),
)
def test_ema_follows_decay_times_average_plus_one_minus_decay_times_new(
    nnx: Any, decay: float, start: np.ndarray, data: st.DataObject
) -> None:
    model = _model(nnx, start, start)
    ema = nnx.EMA(model, decay=decay, only=nnx.Param)
    expected = start.astype(np.float32)
    for new in data.draw(st.lists(vectors, min_size=1, max_size=3), label="new kernels"):
        new = np.resize(new, start.shape).astype(np.float32)
        model.kernel[...] = jnp.asarray(new)
        ema.update(model)
        expected = decay * expected + (1 - decay) * new
    averaged = ema.apply_to(model).kernel[...]
    assert _close(averaged, expected), f"EMA(decay={decay}): expected kernel {expected}, got {averaged}"
