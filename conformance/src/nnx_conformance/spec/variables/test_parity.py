"""Parity of Variables with flax.nnx: copy.copy, has_metadata, metadata drawn over the
documented Variable types, and a Variable made with an ``out_sharding``."""

from __future__ import annotations

import copy
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nnx_conformance import graph_strategies as gs
from nnx_conformance.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@given(recipe=gs.variable_recipes(), name=st.sampled_from(["tag", "hijax", "color"]))
def test_copy_and_has_metadata_agree_with_flax(nnx: Any, flax_nnx: Any, recipe: gs.VariableRecipe, name: str) -> None:
    def scenario(nnx: Any) -> Any:
        variable = gs.variable_type(nnx, recipe.type_name)(jnp.asarray(recipe.value), **dict(recipe.metadata))
        copied = copy.copy(variable)
        copied[...] = copied[...] + 1
        return copied, variable, copied is variable, variable.has_metadata(name), copied.has_metadata(name)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.result[1][2] == ("bool", False), "flax's copy.copy makes a new Variable"


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
def test_a_variable_takes_a_named_sharding_as_out_sharding(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
        variable = nnx.Param(jnp.ones(2), out_sharding=NamedSharding(mesh, PartitionSpec("x")))
        return variable[...], str(variable[...].sharding.spec)

    assert_same(flax_nnx, nnx, scenario)
