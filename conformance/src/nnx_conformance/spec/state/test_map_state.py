"""Laws of ``map_state``: it maps ``f(path, variable)`` over every Variable of a State and
returns a State of the results at the same paths, leaving the State it was given as it
was (its docstring: "Map ``f`` over :class:`State` object ... New state")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import state_snapshot, variables_by_path

pytestmark = pytest.mark.kind("property")


@dataclass(frozen=True)
class Seen:
    """What the mapped function was called with: a path, a Variable's type and its values
    (a plain object, so that it stays one leaf of the mapped State)."""

    path: tuple[Any, ...]
    type_name: str
    values: Any


def _seen(path: Any, variable: Any) -> Seen:
    return Seen(tuple(path), type(variable).__name__, np.asarray(variable[...]).tolist())


def _at(state: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        state = state[key]
    return state


@pytest.mark.apis("map_state")
@given(data=st.data())
def test_map_state_puts_f_of_each_path_and_variable_at_that_path(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    state = nnx.state(node)
    before = state_snapshot(nnx, state)
    mapped = nnx.map_state(_seen, state)
    assert isinstance(mapped, nnx.State), f"map_state returns a State, got a {type(mapped).__name__}"
    variables = variables_by_path(nnx, node)
    for path, variable in variables.items():
        expected = _seen(path, variable)
        got = _at(mapped, path)
        assert got == expected, f"map_state(f, state) at {path}: expected f(path, variable) = {expected}, got {got}"
    count = len(jax.tree.leaves(mapped))
    assert count == len(variables), (
        f"map_state(f, state) holds {count} results, expected one per Variable ({len(variables)})"
    )
    problem = difference(before, state_snapshot(nnx, state))
    assert problem is None, f"map_state changed the State it was given {problem}"
