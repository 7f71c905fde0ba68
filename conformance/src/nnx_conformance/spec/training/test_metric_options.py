"""Differential tests of metric options the other tests leave out: an Accuracy threshold that
is not a Python float, the masks MultiMetric.update hands on (one for all metrics, or one per
metric name), and Metric.split with filters."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("training/metrics")]

LOGITS = jnp.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
LABELS = jnp.array([1, 1, 0, 0], jnp.int32)
VALUES = jnp.array([1.0, 2.0, 3.0, 4.0])


@pytest.mark.apis("metrics")
@pytest.mark.documented("Accuracy.__init__ docstring: for binary classification, pass in a float threshold")
@pytest.mark.parametrize("threshold", [1, "0.5", np.float32(0.5), 0.5], ids=["int", "str", "float32", "float"])
def test_accuracy_takes_a_python_float_threshold_as_flax_does(nnx: Any, flax_nnx: Any, threshold: Any) -> None:
    def scenario(nnx: Any) -> Any:
        accuracy = nnx.metrics.Accuracy(threshold=threshold)
        accuracy.update(logits=LOGITS[:, 1], labels=LABELS)
        return accuracy.compute()

    assert_same(flax_nnx, nnx, scenario, mentions=() if threshold == 0.5 else ("threshold",))


MASKS: dict[str, Any] = {
    "none": None,
    "one array": jnp.array([1, 0, 1, 1]),
    "per metric": {"accuracy": jnp.array([1, 1, 0, 1])},
    "per metric, both": {"accuracy": jnp.array([0, 1, 1, 1]), "loss": jnp.array([1, 1, 1, 0])},
}


@pytest.mark.apis("MultiMetric", "metrics")
@pytest.mark.documented("MultiMetric.update docstring: mask, one array for all metrics or a dict by metric name")
@pytest.mark.parametrize("mask", sorted(MASKS))
def test_multimetric_update_hands_its_mask_on_as_flax_does(nnx: Any, flax_nnx: Any, mask: str) -> None:
    def scenario(nnx: Any) -> Any:
        metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average())
        given = {} if MASKS[mask] is None else {"mask": MASKS[mask]}
        metrics.update(logits=LOGITS, labels=LABELS, values=VALUES, **given)
        return metrics.compute()

    assert_same(flax_nnx, nnx, scenario)


FILTERS: dict[str, Any] = {
    "no filter": lambda nnx: (),
    "MetricState": lambda nnx: (nnx.metrics.MetricState,),
    "MetricState and the rest": lambda nnx: (nnx.metrics.MetricState, ...),
}


@pytest.mark.apis("metrics", "split")
@pytest.mark.documented(None)
@pytest.mark.parametrize("filters", sorted(FILTERS))
def test_a_metric_splits_as_nnx_split_does_in_flax(nnx: Any, flax_nnx: Any, filters: str) -> None:
    def scenario(nnx: Any) -> Any:
        average = nnx.metrics.Average()
        average.update(values=VALUES)
        graphdef, *states = average.split(*FILTERS[filters](nnx))
        return states, nnx.merge(graphdef, *states).compute()

    assert_same(flax_nnx, nnx, scenario)
