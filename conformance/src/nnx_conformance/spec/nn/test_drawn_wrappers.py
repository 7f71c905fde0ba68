"""Parity with flax.nnx of the layers built around other layers, over drawn arguments:
Bidirectional over two RNNs of any cells (merge, time-major layout, carries returned or
not) and LoRALinear with the Linear's and the LoRA's own dtypes and options. The same
parameters bit for bit, the same outputs and gradients."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = pytest.mark.kind("differential")


@pytest.mark.area("nn/recurrent")
@pytest.mark.apis("Bidirectional", "RNN", *strategies.RECURRENT_CELLS)
@given(drawn=strategies.bidirectional_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_a_bidirectional_rnn_has_the_parameters_carries_and_outputs_of_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.BidirectionalArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("Bidirectional", drawn, seed, x))


@pytest.mark.area("nn/lora")
@pytest.mark.apis("LoRALinear", "LoRAParam")
@given(drawn=strategies.lora_linear_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_a_lora_linear_with_its_own_lora_options_has_the_parameters_and_outputs_of_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("LoRALinear", drawn, seed, x))
