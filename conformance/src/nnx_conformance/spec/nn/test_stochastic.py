"""Parity of Dropout with flax.nnx: from the same Rngs, the same masks (outputs equal
exactly) and the same stream counts after each call."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/stochastic")]


@pytest.mark.apis("Dropout", "Rngs")
@given(
    drawn=strategies.dropout_args(),
    stream=st.sampled_from(["default", "dropout"]),
    seed=strategies.seeds,
    input_seed=strategies.seeds,
)
def test_dropout_masks_and_rng_counts_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, stream: str, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    case = layer_case("Dropout", drawn, seed, x, calls=2, ulps=0.0, rngs=lambda nnx: nnx.Rngs(**{stream: seed}))
    assert_agrees(flax_nnx, nnx, case)


@pytest.mark.apis("Dropout", "Rngs")
@given(at_call=st.booleans(), rate=st.sampled_from([0.5, 1.0, 1.5, -0.5]), input_seed=strategies.seeds)
def test_dropout_without_a_dropout_stream_raises_as_flax(
    nnx: Any, flax_nnx: Any, at_call: bool, rate: float, input_seed: int
) -> None:
    x = strategies.layer_input((2, 3), input_seed)

    def scenario(nnx: Any) -> Any:
        if at_call:
            return nnx.Dropout(rate)(x, rngs=nnx.Rngs(params=0))
        return nnx.Dropout(rate, rngs=nnx.Rngs(params=0))(x)

    assert_same(flax_nnx, nnx, scenario, mentions=("dropout",))
