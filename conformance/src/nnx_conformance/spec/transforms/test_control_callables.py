"""Parity of the control-flow transforms with flax.nnx for callables that are no plain
functions: an unhashable callable object (a dataclass instance) as ``cond``'s branches
and ``while_loop``'s and ``fori_loop``'s functions, without graph updates, updating a
Module's state as a function would."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = pytest.mark.kind("differential")

MODES = gs.NO_UPDATES_MODE_KEYWORDS


@dataclasses.dataclass
class Scale:
    """An unhashable callable (a dataclass compared by value): scales the counter's value."""

    factor: float

    def __call__(self, model: Any) -> Any:
        model["value"][...] *= self.factor
        return model


@dataclasses.dataclass
class Scaled:
    """An unhashable ``cond`` branch: scales the counter's value and returns it."""

    factor: float

    def __call__(self, model: Any) -> Any:
        model["value"][...] *= self.factor
        return model["value"][...]


@dataclasses.dataclass
class Below:
    """An unhashable loop condition: the counter's value is below ``limit``."""

    limit: float

    def __call__(self, model: Any) -> Any:
        return model["value"][...] < self.limit


@dataclasses.dataclass
class Step:
    """An unhashable ``fori_loop`` body: adds the index to the counter's value."""

    def __call__(self, i: Any, model: Any) -> Any:
        model["value"][...] += i
        return model


@pytest.mark.apis("cond", "while_loop", "fori_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_unhashable_callables_run_in_control_flow_as_in_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        options = MODES[mode]
        models = [nnx.Dict(value=nnx.BatchStat(jnp.array(1.5))) for _ in range(3)]
        chosen = nnx.cond(jnp.array(True), Scaled(2.0), Scaled(3.0), models[0], **options)
        nnx.while_loop(Below(10.0), Scale(2.0), models[1], **options)
        nnx.fori_loop(0, 4, Step(), models[2], **options)
        return chosen, models

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
