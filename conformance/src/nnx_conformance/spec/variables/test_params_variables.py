"""The keywords of every Variable type, which the other tests leave at their defaults for
most types: ``hijax``, ``ref`` and ``eager_sharding`` set either way, and metadata. Each
drawn Variable is built by flax.nnx and the implementation, updated in place and through
``set_value``, and compared value for value and metadata for metadata."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.strategies.callables import assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("variables")]

VARIABLE_TYPES = ("Variable", "Param", "BatchStat", "Cache", "Intermediate", "LoRAParam", "OptArray", "OptState",
                  "Perturbation", "RngCount", "RngKey", "RngState")


@pytest.mark.apis(*VARIABLE_TYPES)
@pytest.mark.parametrize("variable_type", VARIABLE_TYPES)
@settings(max_examples=4)
@given(
    hijax=st.booleans(),
    ref=st.booleans(),
    eager_sharding=st.booleans(),
    tag=st.integers(0, 3),
    values=st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=3),
)
def test_a_variable_built_with_each_keyword_behaves_as_flax_s(
    nnx: Any, flax_nnx: Any, variable_type: str, hijax: bool, ref: bool, eager_sharding: bool, tag: int, values: list[float]
) -> None:
    initial = np.asarray(values, np.float32)

    def scenario(nnx: Any) -> Any:
        variable = getattr(nnx, variable_type)(initial.copy(), hijax=hijax, ref=ref, eager_sharding=eager_sharding, tag=tag)
        built = (isinstance(variable.get_raw_value(), jax.Ref), sorted(variable.get_metadata().items()), np.array(variable[...]))
        variable[...] = variable[...] + 1
        variable.set_value(variable.get_value() * 2)
        return built, sorted(variable.get_metadata().items()), variable[...]

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
