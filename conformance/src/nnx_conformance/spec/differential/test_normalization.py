"""Parity of the normalization layers with flax.nnx: the same parameters and batch
statistics bit for bit, and the same outputs within rounding, over two calls (so
BatchNorm's running averages are compared after each update)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance import strategies
from nnx_conformance.differential import assert_agrees, layer_case

pytestmark = pytest.mark.area("nn/normalization")

NORMS = ("BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm")


@pytest.mark.apis(*NORMS)
@given(data=st.data(), layer=st.sampled_from(NORMS), seed=strategies.seeds, input_seed=strategies.seeds)
def test_normalization_parameters_statistics_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, data: st.DataObject, layer: str, seed: int, input_seed: int
) -> None:
    drawn = data.draw(strategies.norm_args(layer), label=f"{layer} arguments")
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case(layer, drawn, seed, x, calls=2))
