"""Laws of ``check_pytree``: it "checks if a pytree is valid" (its docstring), returning
nothing for any drawn Module or Pytree graph, and raising a TypeError that says a Pytree
was expected for what is no Pytree, as flax 0.12.12 does."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies

pytestmark = pytest.mark.kind("property")


@pytest.mark.apis("check_pytree")
@given(data=st.data())
def test_check_pytree_accepts_every_module_graph(nnx: Any, data: st.DataObject) -> None:
    node = data.draw(strategies.trees(nnx), label="graph")
    result = nnx.check_pytree(node)
    assert result is None, f"check_pytree of a valid {type(node).__name__}: expected None, got {result!r}"


NOT_PYTREES = {
    "a dict": lambda nnx: {"a": 1},
    "an int": lambda nnx: 3,
    "a Variable": lambda nnx: nnx.Param(jnp.ones(1)),
    "a list of Modules": lambda nnx: [nnx.Linear(1, 1, rngs=nnx.Rngs(0))],
}


@pytest.mark.apis("check_pytree")
@pytest.mark.parametrize("what", sorted(NOT_PYTREES))
def test_check_pytree_rejects_what_is_no_pytree_with_a_type_error(nnx: Any, what: str) -> None:
    with pytest.raises(TypeError, match="Expected a Pytree"):
        nnx.check_pytree(NOT_PYTREES[what](nnx))
