"""Parity of LoRA and LoRALinear with flax.nnx: the same low-rank factors bit for bit
and the same outputs within rounding."""

from __future__ import annotations

from typing import Any

import jax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/lora")]

NORMAL = jax.nn.initializers.normal()
"""A non-zero ``b_initializer``: with the default zeros, the low-rank path adds nothing."""


@pytest.mark.apis("LoRA")
@given(drawn=strategies.lora_args(), around_linear=st.booleans(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_lora_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, around_linear: bool, seed: int, input_seed: int
) -> None:
    in_features, _, out_features = drawn.args

    def build(nnx: Any, rngs: Any) -> Any:
        base = nnx.Linear(in_features, out_features, rngs=rngs) if around_linear else None
        return nnx.LoRA(*drawn.args, base_module=base, b_initializer=NORMAL, **drawn.keywords(nnx), rngs=rngs)

    case = layer_case("LoRA", drawn, seed, strategies.layer_input(drawn.input_shape, input_seed), build=build)
    assert_agrees(flax_nnx, nnx, case)


@pytest.mark.apis("LoRALinear")
@given(drawn=strategies.lora_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_lora_linear_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    in_features, rank, out_features = drawn.args

    def build(nnx: Any, rngs: Any) -> Any:
        return nnx.LoRALinear(
            in_features, out_features, lora_rank=rank, b_initializer=NORMAL, **drawn.keywords(nnx), rngs=rngs
        )

    case = layer_case("LoRALinear", drawn, seed, strategies.layer_input(drawn.input_shape, input_seed), build=build)
    assert_agrees(flax_nnx, nnx, case)
