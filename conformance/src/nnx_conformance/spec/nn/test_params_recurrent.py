"""The recurrent layers' keywords that the other tests leave at their defaults: the
cells' gate and activation functions, initializers (carry included), parameter dtypes,
custom ``promote_dtype`` functions (called as flax calls them), metadata, ``keep_rngs``
and SimpleCell's ``residual``; RNN's ``time_major``, ``unroll``, ``state_axes`` and
``broadcast_rngs``; Bidirectional's ``merge_fn`` and ``time_major``. Each case is built by
flax.nnx and the implementation from a drawn seed and compared output for output, state
for state and gradient for gradient, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies import RECURRENT_CELLS
from nnx_conformance.testing.strategies.callables import (
    NORMAL,
    OptionCase,
    Promotion,
    assert_runs_as_in_flax,
)

# Graph mode whatever --graph-mode says: the cases were drawn against flax in graph mode, and
# in tree mode flax 0.12.12 fails some of them (its tree-mode grad differentiates the Rngs count).
pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/recurrent"), pytest.mark.graph_mode("graph")]


def _step(nnx: Any, cell: Any, x: Any) -> Any:
    """One step of ``cell`` on ``x`` from an initial carry drawn from ``Rngs(carry=1)``."""
    return cell(cell.initialize_carry(x.shape, nnx.Rngs(carry=1)), x)


def _cell_options(cell: str) -> dict[str, Any]:
    """Every keyword of ``cell`` away from its default: functions, initializers, bfloat16
    parameters, metadata, kept Rngs."""
    options: dict[str, Any] = {
        "activation_fn": jax.nn.relu,
        "kernel_init": NORMAL,
        "recurrent_kernel_init": NORMAL,
        "bias_init": NORMAL,
        "carry_init": NORMAL,
        "param_dtype": jnp.bfloat16,
        "promote_dtype": Promotion(jnp.float32),
        "keep_rngs": True,
        "kernel_metadata": {"k": 1},
        "recurrent_kernel_metadata": {"r": 2},
        "bias_metadata": {"b": 3},
    }
    if cell == "SimpleCell":
        options["residual"] = True
    else:
        options["gate_fn"] = jax.nn.hard_sigmoid
    return options


def _simple_cell(nnx: Any) -> Any:
    return nnx.SimpleCell(3, 4, carry_init=NORMAL, rngs=nnx.Rngs(1))


def _time_major(nnx: Any, layer: Any, x: Any) -> Any:
    return layer(jnp.swapaxes(x, 0, 1))


CASES = (
    *(
        OptionCase(
            f"{cell} with every keyword set",
            cell,
            (3, 4),
            lambda nnx, cell=cell: _cell_options(cell),
            (2, 3),
            call=_step,
        )
        for cell in RECURRENT_CELLS
    ),
    OptionCase(
        "RNN time major, unrolled twice",
        "RNN",
        (),
        lambda nnx: {"cell": _simple_cell(nnx), "time_major": True, "unroll": 2},
        (2, 5, 3),
        call=_time_major,
    ),
    OptionCase(
        "RNN with state axes and broadcast Rngs",
        "RNN",
        (),
        lambda nnx: {
            "cell": _simple_cell(nnx),
            "state_axes": {...: nnx.Carry},
            "broadcast_rngs": "carry",
            "return_carry": True,
        },
        (2, 5, 3),
    ),
    OptionCase(
        "Bidirectional time major, merged by difference",
        "Bidirectional",
        (),
        lambda nnx: {
            "forward_rnn": nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(1))),
            "backward_rnn": nnx.RNN(nnx.LSTMCell(3, 4, rngs=nnx.Rngs(2))),
            "merge_fn": jnp.subtract,
            "time_major": True,
        },
        (2, 5, 3),
        call=_time_major,
    ),
)


@pytest.mark.apis("RNN", "Bidirectional", *RECURRENT_CELLS)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@settings(max_examples=3)
@given(seed=strategies.seeds, input_seed=strategies.seeds)
def test_a_recurrent_keyword_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, case: OptionCase, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(case.input_shape, input_seed)
    assert_runs_as_in_flax(flax_nnx, nnx, case.scenario(seed, x))
