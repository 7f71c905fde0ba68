"""Parity of the recurrent cells with flax.nnx: the same parameters bit for bit, and the
same carries and outputs within rounding, for one step and scanned by RNN."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nnx_conformance import strategies
from nnx_conformance.assertions import assert_agrees
from nnx_conformance.differential import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/recurrent")]


def _step(nnx: Any, cell: Any, x: Any) -> Any:
    """One step of ``cell`` on the first time step of ``x``, from its initial carry (drawn
    from the ``carry`` stream of ``Rngs(1)``)."""
    carry = cell.initialize_carry(x[:, 0].shape, nnx.Rngs(carry=1))
    return cell(carry, x[:, 0])


def _buildable(cell: str, drawn: strategies.LayerArgs) -> bool:
    """Whether flax can build the cell: the orthogonal recurrent initializer (a QR
    decomposition) rejects bfloat16, which only LSTMCell's float32-then-cast one avoids."""
    return cell == "LSTMCell" or drawn.kwargs["param_dtype"] == jnp.float32


def _carry_keeps_its_dtype(drawn: strategies.LayerArgs) -> bool:
    """Whether a cell's step returns its carry in the dtype the carry starts in
    (``param_dtype``): scanning needs that, in flax as in any JAX scan."""
    dtype, param_dtype = drawn.kwargs["dtype"], drawn.kwargs["param_dtype"]
    return dtype == param_dtype or (dtype is None and param_dtype == jnp.float32)


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
    assume(_buildable(cell, drawn))
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
    assume(_buildable(cell, drawn) and _carry_keeps_its_dtype(drawn))
    x = strategies.layer_input(drawn.input_shape, input_seed)

    def scan(nnx: Any, layer: Any, x: Any) -> Any:
        return nnx.RNN(layer)(x, return_carry=True, reverse=reverse, keep_order=True)

    assert_agrees(flax_nnx, nnx, layer_case(cell, drawn, seed, x, call=scan))
