"""Random programs written by a state machine from the whole API (layers of every family,
nesting, every transform in drawn modes, graph utilities, attribute and metadata changes,
optimizer and metric steps), run on the implementation and on flax.nnx: they agree after
every step."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from nnx_conformance.testing import program_machine

pytestmark = pytest.mark.kind("differential")

STEPS = 12
"""Steps per program under the ``ci`` profile; ``thorough`` draws more programs, not longer ones."""

APIS = (
    "jit", "grad", "value_and_grad", "vmap", "scan", "remat", "eval_shape", "cond", "switch", "fori_loop", "while_loop",
    "checkify", "StateAxes", "DiffState", "split", "merge", "update", "clone", "state", "pop", "graphdef", "iter_graph", "variables",
    "recursive_map", "to_tree", "from_tree", "view", "Sequential", "List", "Dict", "Optimizer", "MultiMetric", "RNN",
    "set_graph_mode", "set_graph_updates",
)


@pytest.mark.apis(*APIS)
@pytest.mark.documented("guide:nnx_basics, guide:transforms and the API reference of each name (the whole API, composed)")
def test_a_random_program_of_the_whole_api_agrees_with_flax_after_every_step(nnx: Any, flax_nnx: Any) -> None:
    machine = program_machine.machine_for(flax_nnx, nnx)
    run_state_machine_as_test(machine, settings=settings(settings.default, stateful_step_count=STEPS))
