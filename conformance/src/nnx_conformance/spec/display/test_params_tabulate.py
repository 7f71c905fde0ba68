"""tabulate's keywords that the other tests leave at their defaults: ``column_kwargs``,
which rich applies to every column of the table (alignment, wrapping, width). Each drawn
table is made by flax.nnx and the implementation and compared character for character."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("display"), IN_GRAPH_MODE]

column_options = st.fixed_dictionaries(
    {},
    optional={
        "justify": st.sampled_from(["left", "center", "right"]),
        "no_wrap": st.booleans(),
        "max_width": st.integers(8, 30),
        "overflow": st.sampled_from(["fold", "ellipsis"]),
    },
)


@pytest.mark.apis("tabulate")
@settings(max_examples=4)
@given(column_kwargs=column_options)
def test_tabulate_lays_out_its_columns_as_flax_does(nnx: Any, flax_nnx: Any, column_kwargs: dict[str, Any]) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
        return nnx.tabulate(model, jnp.ones((1, 2)), column_kwargs=column_kwargs, console_kwargs={"width": 160})

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
