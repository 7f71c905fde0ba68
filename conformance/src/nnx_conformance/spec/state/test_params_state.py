"""The State functions' keywords that the other tests leave at their defaults: the State
class that from_flat_state and merge_state build, to_pure_dict's ``extract_fn`` and
replace_by_pure_dict's ``replace_fn``. Each drawn call runs on flax.nnx and the
implementation and is compared result for result, bit for bit."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given, settings

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("state"), IN_GRAPH_MODE]


def _state(nnx: Any, seed: int) -> Any:
    """The state of a Linear and a BatchNorm: Params and BatchStats, two levels deep."""
    return nnx.state(nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), nnx.BatchNorm(3, rngs=nnx.Rngs(seed))))


@pytest.mark.apis("from_flat_state", "merge_state", "State")
@settings(max_examples=3)
@given(seed=strategies.seeds)
def test_from_flat_state_and_merge_state_build_the_class_they_are_given_as_flax_does(
    nnx: Any, flax_nnx: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        class TaggedState(nnx.State):
            """A State subclass, to see which class a function builds."""

        state = _state(nnx, seed)
        params, stats = nnx.split_state(state, nnx.Param, ...)
        rebuilt = nnx.from_flat_state(nnx.to_flat_state(state), cls=TaggedState)
        merged = nnx.merge_state(params, stats, cls=TaggedState)
        return type(rebuilt).__name__, rebuilt, type(merged).__name__, merged

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("to_pure_dict", "replace_by_pure_dict")
@settings(max_examples=3)
@given(seed=strategies.seeds, other_seed=strategies.seeds)
def test_pure_dict_conversions_call_their_functions_as_flax_does(
    nnx: Any, flax_nnx: Any, seed: int, other_seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        extracted: list[str] = []
        replaced: list[str] = []

        def extract(variable: Any) -> Any:
            extracted.append(type(variable).__name__)
            return variable.get_value() * 2

        def replace(variable: Any, value: Any) -> Any:
            replaced.append(type(variable).__name__)
            return variable.replace(jnp.asarray(value) + 1)

        state = _state(nnx, seed)
        pure = nnx.to_pure_dict(state, extract_fn=extract)
        nnx.replace_by_pure_dict(state, nnx.to_pure_dict(_state(nnx, other_seed)), replace_fn=replace)
        return pure, state, extracted, replaced

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
