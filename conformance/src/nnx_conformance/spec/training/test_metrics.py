"""Parity of the Average metric with flax.nnx under masks: drawn sequences of updates
with array or scalar values, with or without a boolean mask, give flax's running
totals, counts and averages."""

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
