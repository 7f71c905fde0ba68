"""Parity of the recurrent cells with flax.nnx: the same parameters bit for bit, and the
same carries and outputs within rounding, for one step and scanned by RNN."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import layer_case

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


STATE_AXES = {
    "all carried": lambda nnx: None,
    "params broadcast": lambda nnx: nnx.StateAxes({nnx.Param: None, ...: nnx.Carry}),
    "rng state broadcast": lambda nnx: nnx.StateAxes({nnx.RngState: None, ...: nnx.Carry}),
    "dropout broadcast": lambda nnx: nnx.StateAxes({"dropout": None, ...: nnx.Carry}),
}
"""``RNN(state_axes=...)`` by label, for an implementation."""

BROADCAST_RNGS = {
    "none": lambda nnx: None,
    "dropout": lambda nnx: "dropout",
    "dropout and noise": lambda nnx: ("dropout", "noise"),
    "RngState": lambda nnx: nnx.RngState,
    "everything": lambda nnx: ...,
}
"""``RNN(broadcast_rngs=...)`` by label, for an implementation."""

CALL_RNGS = {
    "none": lambda nnx, seed: None,
    "Rngs": lambda nnx, seed: nnx.Rngs(carry=seed),
    "RngStream": lambda nnx, seed: nnx.RngStream(seed, tag="carry"),
}
"""``RNN.__call__(rngs=...)`` by label, for an implementation."""


def _noisy_rnn(nnx: Any, cell: Any, *, state_axes: str, broadcast_rngs: str, call_rngs: str, seed: int) -> Any:
    """An ``RNN`` over ``cell`` wrapped so that each step also draws from a ``dropout`` and a
    ``noise`` stream, beside the rngs given to its calls (kept to compare their state)."""

    class NoisyCell(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.cell = cell
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.noise = rngs.noise.fork()

        @property
        def num_feature_axes(self) -> int:
            return 1

        def initialize_carry(self, input_shape: tuple[int, ...], rngs: Any = None) -> Any:
            return self.cell.initialize_carry(input_shape, rngs)

        def __call__(self, carry: Any, x: Any) -> Any:
            carry, y = self.cell(carry, x)
            return carry, self.dropout(y) + jax.random.uniform(self.noise(), y.shape, y.dtype)

    class NoisyRNN(nnx.Module):
        def __init__(self) -> None:
            rngs = nnx.Rngs(dropout=seed + 1, noise=seed + 2)
            self.rnn = nnx.RNN(
                NoisyCell(rngs),
                state_axes=STATE_AXES[state_axes](nnx),
                broadcast_rngs=BROADCAST_RNGS[broadcast_rngs](nnx),
            )
            self.call_rngs = CALL_RNGS[call_rngs](nnx, seed + 3)

        def __call__(self, x: Any) -> Any:
            return self.rnn(x, rngs=self.call_rngs, return_carry=True)

    return NoisyRNN()


@pytest.mark.apis("RNN", "Dropout", "StateAxes", *strategies.RECURRENT_CELLS)
@given(
    cell=st.sampled_from(strategies.RECURRENT_CELLS),
    drawn=strategies.cell_args(),
    state_axes=st.sampled_from(sorted(STATE_AXES)),
    broadcast_rngs=st.sampled_from(sorted(BROADCAST_RNGS)),
    call_rngs=st.sampled_from(sorted(CALL_RNGS)),
    seed=strategies.seeds,
    input_seed=strategies.seeds,
)
def test_an_rnn_broadcasts_the_streams_and_state_its_axes_name_as_flax_does(
    nnx: Any,
    flax_nnx: Any,
    cell: str,
    drawn: strategies.LayerArgs,
    state_axes: str,
    broadcast_rngs: str,
    call_rngs: str,
    seed: int,
    input_seed: int,
) -> None:
    """Broadcast streams draw one key per call, the same mask and noise at every step; the
    rest of the cell's state is carried; rngs given to a call are forked for the carry."""
    assume(_buildable(cell, drawn) and _carry_keeps_its_dtype(drawn))
    x = strategies.layer_input(drawn.input_shape, input_seed)

    def build(nnx: Any, rngs: Any) -> Any:
        options = dict(state_axes=state_axes, broadcast_rngs=broadcast_rngs, call_rngs=call_rngs, seed=seed)
        return _noisy_rnn(nnx, drawn.build(nnx, cell, rngs), **options)

    case = layer_case(cell, drawn, seed, x, build=build, calls=2, grad=False)
    case.name = (
        f"RNN(state_axes={state_axes}, broadcast_rngs={broadcast_rngs}) over {case.name}, called with rngs={call_rngs}"
    )
    assert_agrees(flax_nnx, nnx, case)


@pytest.mark.apis("GRUCell", "LSTMCell", "OptimizedLSTMCell", "SimpleCell")
@given(
    cell=st.sampled_from(["GRUCell", "LSTMCell", "OptimizedLSTMCell", "SimpleCell"]),
    batch=st.sampled_from([(2,), (2, 3)]),
)
def test_a_cell_steps_over_any_number_of_batch_axes_as_flax(
    nnx: Any, flax_nnx: Any, cell: str, batch: tuple[int, ...]
) -> None:
    def scenario(nnx: Any) -> Any:
        layer = getattr(nnx, cell)(4, 5, rngs=nnx.Rngs(0))
        x = jnp.linspace(-1.0, 1.0, 4 * math.prod(batch)).reshape(*batch, 4)
        return layer(layer.initialize_carry((*batch, 4), nnx.Rngs(1)), x)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("RNN", "StateAxes", "SimpleCell")
@pytest.mark.parametrize("state_axes", [label for label in STATE_AXES if label != "all carried"])
def test_an_rnn_with_state_axes_and_no_broadcast_streams_runs_as_flax_s(
    nnx: Any, flax_nnx: Any, state_axes: str
) -> None:
    """``state_axes`` other than the default, without ``broadcast_rngs``: the outputs and the
    cell's state after the call are flax's."""

    def scenario(nnx: Any) -> Any:
        rnn = nnx.RNN(nnx.SimpleCell(3, 4, rngs=nnx.Rngs(0)), state_axes=STATE_AXES[state_axes](nnx))
        out = rnn(jnp.linspace(-1.0, 1.0, 2 * 5 * 3).reshape(2, 5, 3), return_carry=True)
        return out, nnx.state(rnn)

    assert_same(flax_nnx, nnx, scenario)
