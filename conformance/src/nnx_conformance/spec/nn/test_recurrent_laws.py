"""Laws of the recurrent building blocks on a cell written on ``RNNCellBase``, whose steps
a numpy loop computes: ``RNN`` scans the cell over the time axis from the carry of
``initialize_carry``, and ``Bidirectional`` merges (by default concatenates on the last
axis) the forward RNN's outputs with the backward RNN's, run over the reversed sequence
and put back in time order, as its docstring's example shows (4 + 4 features give 8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_close

pytestmark = pytest.mark.kind("property")


class Scan(NamedTuple):
    """The outputs of a cell scanned over time, in time order, and its final carry."""

    outputs: np.ndarray
    carry: np.ndarray


def leaky_cell(nnx: Any, decay: float) -> Any:
    """A parameter-free cell on ``RNNCellBase``: ``carry = decay * carry + x``, output ``tanh(carry)``."""

    class LeakyCell(nnx.RNNCellBase):
        def __call__(self, carry: Any, x: Any) -> tuple[Any, Any]:
            carry = decay * carry + x
            return carry, jnp.tanh(carry)

        def initialize_carry(self, input_shape: tuple[int, ...], rngs: Any = None) -> Any:
            return jnp.zeros(input_shape)

        @property
        def num_feature_axes(self) -> int:
            return 1

    return LeakyCell()


def scanned(x: np.ndarray, decay: float, *, reverse: bool = False) -> Scan:
    """The leaky cell run by hand over ``x`` of ``[batch, time, features]``."""
    carry = np.zeros((x.shape[0], x.shape[2]))
    outputs = np.zeros(x.shape)
    for t in reversed(range(x.shape[1])) if reverse else range(x.shape[1]):
        carry = decay * carry + x[:, t]
        outputs[:, t] = np.tanh(carry)
    return Scan(outputs, carry)


MERGES: dict[str, Callable[[Any, Any], Any]] = {
    "default": lambda a, b: np.concatenate([a, b], axis=-1),
    "sum": lambda a, b: a + b,
}
"""The merge functions drawn: the default (None passed) concatenates, as the docstring shows."""


DECAYS = st.sampled_from([0.0, 0.5, 0.9])
INPUTS = st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 3))
"""Batch, time and feature sizes of a drawn sequence."""


@pytest.mark.apis("RNNCellBase", "RNN")
@given(decay=DECAYS, sizes=INPUTS, reverse=st.booleans(), seed=strategies.seeds)
def test_rnn_scans_a_cell_written_on_rnn_cell_base_over_time(
    nnx: Any, decay: float, sizes: tuple[int, int, int], reverse: bool, seed: int
) -> None:
    x = strategies.layer_input(sizes, seed)
    cell = leaky_cell(nnx, decay)
    assert isinstance(cell, nnx.Module), "a cell written on RNNCellBase is a Module"
    expected = scanned(x.astype(np.float64), decay, reverse=reverse)
    carry, outputs = nnx.RNN(cell, return_carry=True, reverse=reverse, keep_order=True)(x)
    assert_close(f"RNN(cell, reverse={reverse}, keep_order=True) outputs", outputs, expected.outputs, rtol=1e-5)
    assert_close(f"RNN(cell, reverse={reverse}) final carry", carry, expected.carry, rtol=1e-5)


@pytest.mark.apis("Bidirectional")
@given(decays=st.tuples(DECAYS, DECAYS), sizes=INPUTS, merge=st.sampled_from(sorted(MERGES)), seed=strategies.seeds)
def test_bidirectional_merges_the_forward_outputs_with_the_backward_ones_in_time_order(
    nnx: Any, decays: tuple[float, float], sizes: tuple[int, int, int], merge: str, seed: int
) -> None:
    x = strategies.layer_input(sizes, seed)
    forward, backward = scanned(x.astype(np.float64), decays[0]), scanned(x.astype(np.float64), decays[1], reverse=True)
    options = {} if merge == "default" else {"merge_fn": MERGES[merge]}
    layer = nnx.Bidirectional(
        nnx.RNN(leaky_cell(nnx, decays[0])), nnx.RNN(leaky_cell(nnx, decays[1])), return_carry=True, **options
    )
    (forward_carry, backward_carry), outputs = layer(x)
    assert_close(
        f"Bidirectional outputs merged by {merge}", outputs, MERGES[merge](forward.outputs, backward.outputs), rtol=1e-5
    )
    assert_close("Bidirectional's forward carry", forward_carry, forward.carry, rtol=1e-5)
    assert_close("Bidirectional's backward carry, after the first time step", backward_carry, backward.carry, rtol=1e-5)
