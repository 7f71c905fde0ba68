"""Parity of metrics with flax.nnx: drawn sequences of updates of an Average with array or
scalar values, with or without a boolean mask, give flax's running totals, counts and
averages; Average and Welford take, and refuse, the kinds of values and masks flax's do;
Accuracy takes, and refuses, the label and logit ranks flax does. Average weighs the values
by any mask as its documentation's ``values * mask`` rule says."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.describe import Described, describe

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("training/metrics")]

updates = st.lists(
    st.tuples(
        st.one_of(st.integers(-4, 4).map(float), st.lists(st.integers(-4, 4), min_size=3, max_size=3)),
        st.one_of(st.none(), st.lists(st.booleans(), min_size=3, max_size=3)),
    ),
    min_size=1,
    max_size=3,
)
"""Updates of an Average: (a scalar or three values, no mask or a mask of three)."""


@pytest.mark.apis("metrics.Average")
@pytest.mark.documented(None)
@given(drawn=updates)
def test_average_with_masks_and_scalar_values_computes_what_flax_computes(
    nnx: Any, flax_nnx: Any, drawn: list[tuple[Any, Any]]
) -> None:
    def scenario(nnx: Any) -> Any:
        average = nnx.metrics.Average()
        computed = []
        for values, mask in drawn:
            kwargs = {} if mask is None else {"mask": jnp.asarray(np.array(mask))}
            average.update(values=jnp.asarray(np.array(values, dtype=np.float32)), **kwargs)
            computed.append(average.compute())
        return computed, average

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("metrics.Accuracy")
@pytest.mark.documented(None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    classes=st.integers(2, 4),
    extra=st.integers(-1, 1),
    threshold=st.sampled_from([None, 0.5]),
    seed=st.integers(0, 2**16),
    label_dtype=st.sampled_from(["int32", "int8", "int16", "uint8", "uint32", "bool"]),
)
def test_accuracy_over_labels_of_any_rank_computes_and_refuses_what_flax_does(
    nnx: Any,
    flax_nnx: Any,
    batch: list[int],
    classes: int,
    extra: int,
    threshold: float | None,
    seed: int,
    label_dtype: str,
) -> None:
    """Labels of any rank with logits of one more dimension (or as many, with a threshold),
    and logits of a rank off by ``extra`` or labels of a dtype other than int32, which flax
    refuses."""
    rng = np.random.default_rng(seed)
    shape = (*batch, classes) if threshold is None else tuple(batch)
    if extra > 0:
        shape = (*shape, 1)
    elif extra < 0 and shape:
        shape = shape[:-1]
    logits = rng.standard_normal(shape).astype(np.float32)
    labels = rng.integers(0, 2 if threshold is not None else classes, tuple(batch)).astype(np.int32)

    def scenario(nnx: Any) -> Any:
        accuracy = nnx.metrics.Accuracy(threshold=threshold)
        accuracy.update(logits=jnp.asarray(logits), labels=jnp.asarray(labels).astype(label_dtype))
        return accuracy.compute(), accuracy

    assert_same(flax_nnx, nnx, scenario)


VALUE_KINDS = {
    "a Python int": lambda: 3,
    "a Python float": lambda: 2.5,
    "a NumPy float64 scalar": lambda: np.float64(2.0),
    "a NumPy int64 scalar": lambda: np.int64(2),
    "a NumPy array": lambda: np.array([1.0, 2.0], dtype=np.float32),
    "a jax array": lambda: jnp.array([1.0, 2.0]),
    "a list": lambda: [1.0, 2.0],
    "None": lambda: None,
}
MASK_KINDS = {
    "no mask": lambda: None,
    "a jax boolean mask": lambda: jnp.array([True, False]),
    "a NumPy boolean mask": lambda: np.array([True, False]),
    "a Python bool": lambda: True,
    "a list": lambda: [True, False],
}


@pytest.mark.apis("metrics.Average", "metrics.Welford")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mask", MASK_KINDS)
@pytest.mark.parametrize("values", VALUE_KINDS)
@pytest.mark.parametrize("metric", ["Average", "Welford"])
def test_a_metric_takes_and_refuses_the_values_and_masks_flax_s_does(
    nnx: Any, flax_nnx: Any, metric: str, values: str, mask: str
) -> None:
    """Arrays, and Python numbers without a mask; flax's ValueError for a Python number
    with a mask, its AttributeError for values or masks that are no arrays."""

    def scenario(nnx: Any) -> Any:
        made = getattr(nnx.metrics, metric)()
        given_mask = MASK_KINDS[mask]()
        made.update(values=VALUE_KINDS[values](), **({} if given_mask is None else {"mask": given_mask}))
        return made.compute()

    assert_same(flax_nnx, nnx, scenario)


METRICS = {
    "Average": lambda nnx: nnx.metrics.Average(),
    "Welford": lambda nnx: nnx.metrics.Welford(),
    "Accuracy": lambda nnx: nnx.metrics.Accuracy(),
}


@pytest.mark.apis("metrics.Average", "metrics.Welford", "metrics.Accuracy", "Metric")
@pytest.mark.documented(None)
@pytest.mark.parametrize("metric", METRICS)
def test_a_metric_starts_and_resets_to_flax_s_state_and_statistics(nnx: Any, flax_nnx: Any, metric: str) -> None:
    """Before any update and after ``reset``, a metric's state (values and dtypes) and what
    it computes are flax's."""

    def scenario(nnx: Any) -> Any:
        made = METRICS[metric](nnx)
        fresh = Described(describe(nnx, (nnx.state(made), made.compute())))  # before reset writes its Variables
        if metric == "Accuracy":
            made.update(logits=jnp.array([[0.2, 0.8], [0.9, 0.1]]), labels=jnp.array([1, 1]))
        else:
            made.update(values=jnp.array([1.0, 4.0, 7.0]))
        made.reset()
        return fresh, nnx.state(made), made.compute()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("metrics.Average")
@pytest.mark.documented("api training/metrics page: Average.update uses the `values * mask` rule")
@pytest.mark.parametrize(
    ("values", "mask"),
    [
        (jnp.array([1, 2]), jnp.array([0.5, 0.5])),
        (jnp.array([True, False]), jnp.array([2, 0])),
        (jnp.array([1.0, 2.0]), jnp.array([2, 1])),
    ],
    ids=["int-values-fractional-mask", "boolean-values-integer-mask", "float-values-integer-mask"],
)
def test_average_weighs_the_values_by_the_mask_as_documented(nnx: Any, values: Any, mask: Any) -> None:
    """The total grows by ``(values * mask).sum()`` and the count by the mask's sum."""
    average = nnx.metrics.Average()
    average.update(values=values, mask=mask)
    expected = (values * mask).sum()
    assert float(average.total[...]) == float(expected), (
        f"Average's total after values {values} under mask {mask} is {average.total[...]}, the documented "
        f"values * mask rule gives {expected}"
    )
    assert int(average.count[...]) == int(mask.sum()), (
        f"the count is {average.count[...]}, the mask sums to {mask.sum()}"
    )
