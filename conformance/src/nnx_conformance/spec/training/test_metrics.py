"""Parity of metrics with flax.nnx: drawn sequences of updates of an Average with array or
scalar values, with or without a boolean mask, give flax's running totals, counts and
averages; Accuracy takes, and refuses, the label and logit ranks flax does."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.assertions import assert_same

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
    nnx: Any, flax_nnx: Any, batch: list[int], classes: int, extra: int, threshold: float | None, seed: int,
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
