"""Random programs written by a state machine from the whole API (layers of every family,
nesting, every transform in drawn modes, pmap and shard_map over several devices,
custom_vjp, ensembles made and called under vmap with split rng streams, graph utilities,
attribute and metadata changes, optimizer and metric steps), run on the implementation and
on flax.nnx: they agree after every step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from nnx_conformance.testing import graph_strategies, program_machine, program_steps, programs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

STEPS = 12
"""Steps per program under the ``ci`` profile; ``thorough`` draws more programs, not longer ones."""

APIS = (
    "jit",
    "grad",
    "value_and_grad",
    "vmap",
    "scan",
    "remat",
    "eval_shape",
    "cond",
    "switch",
    "fori_loop",
    "while_loop",
    "checkify",
    "pmap",
    "shard_map",
    "custom_vjp",
    "split_rngs",
    "prefix",
    "StateAxes",
    "DiffState",
    "split",
    "merge",
    "update",
    "clone",
    "state",
    "pop",
    "graphdef",
    "iter_graph",
    "variables",
    "recursive_map",
    "to_tree",
    "from_tree",
    "view",
    "Sequential",
    "List",
    "Dict",
    "Optimizer",
    "MultiMetric",
    "RNN",
    "Bidirectional",
    "LoRA",
    "LoRALinear",
    "set_graph_mode",
    "set_graph_updates",
)


def _program(steps: tuple[Any, ...]) -> Callable[[Any], Any]:
    """A scenario running ``steps`` as the machine runs them, each on a world of its own."""

    def scenario(nnx: Any) -> Any:
        world = program_steps.MachineWorld()
        return [programs.run_step(nnx, step, world, program_steps.snapshot) for step in steps]

    return scenario


@pytest.mark.apis(*APIS)
@pytest.mark.documented(
    "guide:nnx_basics, guide:transforms and the API reference of each name (the whole API, composed)"
)
def test_a_random_program_of_the_whole_api_agrees_with_flax_after_every_step(nnx: Any, flax_nnx: Any) -> None:
    machine = program_machine.machine_for(flax_nnx, nnx)
    run_state_machine_as_test(machine, settings=settings(settings.default, stateful_step_count=STEPS))


@pytest.mark.apis("Optimizer", "Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [False, True], ids=["tree-mode", "graph-mode"])
def test_an_optimizer_over_a_param_whose_sharding_names_is_not_a_tuple_fails_as_in_flax(
    nnx: Any, flax_nnx: Any, graph: bool
) -> None:
    """Found by the state machine: a Param given ``sharding_names=1`` by set_metadata, then an Optimizer step."""
    mode = graph_strategies.Mode(graph, graph, False)
    steps = (
        programs.Create("linear", 0),
        program_steps.SetMetadata(0, 1, "sharding_names", 1),
        programs.OptimizerStep(0, mode),
    )

    assert_same(flax_nnx, nnx, _program(steps))


@pytest.mark.apis("recursive_map", "Sequential")
@pytest.mark.documented(None)
@pytest.mark.parametrize("target", [0, 1], ids=["the-net", "the-sequential"])
def test_recursive_map_over_a_net_held_by_a_sequential_keeps_their_shared_variables_as_in_flax(
    nnx: Any, flax_nnx: Any, target: int
) -> None:
    """Found by the state machine under ``thorough``: a Net put into a Sequential, then a graph-mode
    ``recursive_map`` over either; flax writes each new Variable into the one the graph holds, so the
    Sequential and the Net still share their Variables."""
    steps = (
        programs.Create("linear", 0),
        program_steps.Nest("Sequential", (0,)),
        program_steps.GraphOp(target, "recursive_map", True),
    )

    assert_same(flax_nnx, nnx, _program(steps))
