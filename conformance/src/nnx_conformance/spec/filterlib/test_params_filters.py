"""The filters' keywords that the other tests leave at their defaults: PathContains'
``exact``, which makes a key match part of a path key (a substring) rather than all of
it. Each drawn filter is built by flax.nnx and the implementation and applied to the
same drawn paths, and the states it selects are compared."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("filterlib"), IN_GRAPH_MODE]

NAMES = ("layer", "layers", "kernel", "bias", "norm")
paths = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES) | st.integers(0, 2)), min_size=1, max_size=6)


@pytest.mark.apis("PathContains")
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "partial"])
@settings(max_examples=6)
@given(key=st.sampled_from(("layer", "ern", "norm", "s", 1)), drawn=paths)
def test_path_contains_matches_whole_or_partial_keys_as_flax_does(
    nnx: Any, flax_nnx: Any, key: Any, exact: bool, drawn: list[tuple[Any, Any]]
) -> None:
    def scenario(nnx: Any) -> Any:
        selector = nnx.PathContains(key, exact=exact)
        matched = [selector(path, nnx.Param(jnp.zeros(()))) for path in drawn]
        state = nnx.State({outer: {inner: nnx.Param(jnp.asarray(float(i)))} for i, (outer, inner) in enumerate(drawn)})
        return matched, nnx.filter_state(state, selector)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
