"""Random multi-step programs run on the implementation and on flax.nnx: models created,
called eagerly and under jit, grad, vmap and scan, switched, split and merged, updated,
cloned, filtered and optimized, in graph and tree mode, agree after every step."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from nnx_conformance.testing import programs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

APIS = (
    "jit",
    "grad",
    "vmap",
    "scan",
    "split",
    "merge",
    "update",
    "clone",
    "state",
    "Optimizer",
    "set_graph_mode",
    "set_graph_updates",
)
GUIDES = "guide:nnx_basics and guide:transforms (stateful Modules under transforms, split/merge/update)"


@pytest.mark.apis(*APIS)
@pytest.mark.documented(GUIDES)
@given(program=programs.programs())
def test_a_program_in_either_mode_agrees_with_flax_after_every_step(
    nnx: Any, flax_nnx: Any, program: programs.Program
) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: programs.run(nnx, program))


@pytest.mark.apis(*APIS)
@pytest.mark.documented(GUIDES)
@given(program=programs.programs(tree_only=True))
def test_a_tree_mode_program_agrees_with_flax_after_every_step(
    nnx: Any, flax_nnx: Any, program: programs.Program
) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: programs.run(nnx, program))
