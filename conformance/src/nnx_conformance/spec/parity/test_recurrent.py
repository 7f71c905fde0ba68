"""Parity of the recurrent cells with flax.nnx: the same parameters bit for bit, and the
same carries and outputs within rounding, for one step and scanned by RNN."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance import strategies
from nnx_conformance.spec.parity.compare import assert_agrees, layer_case

pytestmark = pytest.mark.area("nn/recurrent")


def _step(nnx: Any, cell: Any, x: Any) -> Any:
    """One step of ``cell`` on the first time step of ``x``, from its initial carry."""
    carry = cell.initialize_carry(x[:, 0].shape)
    return cell(carry, x[:, 0])


@pytest.mark.apis(*strategies.RECURRENT_CELLS)
@given(
    cell=st.sampled_from(strategies.RECURRENT_CELLS),
    drawn=strategies.cell_args(),
    seed=strategies.seeds,
    input_seed=strategies.seeds,
)
def test_a_cell_step_has_the_parameters_and_outputs_of_flax(
    nnx: Any, flax_nnx: Any, cell: str, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case(cell, drawn, seed, x, call=_step))


@pytest.mark.apis("RNN", *strategies.RECURRENT_CELLS)
@given(
    cell=st.sampled_from(strategies.RECURRENT_CELLS),
    drawn=strategies.cell_args(),
    reverse=st.booleans(),
    seed=strategies.seeds,
    input_seed=strategies.seeds,
)
def test_an_rnn_over_a_cell_returns_the_carry_and_outputs_of_flax(
    nnx: Any, flax_nnx: Any, cell: str, drawn: strategies.LayerArgs, reverse: bool, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)

    def scan(nnx: Any, layer: Any, x: Any) -> Any:
        return nnx.RNN(layer)(x, return_carry=True, reverse=reverse, keep_order=True)

    assert_agrees(flax_nnx, nnx, layer_case(cell, drawn, seed, x, call=scan))
