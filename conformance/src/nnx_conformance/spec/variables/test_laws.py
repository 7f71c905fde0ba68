"""Laws of Variables: values, metadata, pytree behaviour, collection names."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.snapshots import variable_entry

pytestmark = pytest.mark.kind("property")

DOCUMENTED_NAMES = {
    "Param": "params",
    "BatchStat": "batch_stats",
    "Cache": "cache",
    "Intermediate": "intermediates",
    "Perturbation": "perturbations",
}
"""The collection names of the built-in Variable types (the Linen collection names)."""


@pytest.mark.apis("Variable")
@given(data=st.data())
def test_a_variable_holds_its_value_and_the_metadata_it_was_created_with(nnx: Any, data: st.DataObject) -> None:
    variable_type = data.draw(strategies.variable_types(nnx), label="type")
    value = data.draw(strategies.arrays(), label="value")
    metadata = data.draw(strategies.metadata, label="metadata")
    variable = variable_type(value, **metadata)
    assert np.asarray(variable[...]).tolist() == np.asarray(value).tolist(), f"{variable!r}[...] is not {value!r}"
    assert variable[...].dtype == value.dtype, f"{variable!r} has dtype {variable[...].dtype}, expected {value.dtype}"
    held = variable.get_metadata()
    missing = {key: val for key, val in metadata.items() if held.get(key) != val}
    assert not missing, f"{variable_type.__name__} created with metadata {metadata} holds {held}"
    for key, val in metadata.items():
        assert getattr(variable, key) == val, (
            f"{variable_type.__name__}.{key} is {getattr(variable, key)!r}, expected {val!r}"
        )


@pytest.mark.apis("Variable")
@given(data=st.data())
def test_setting_a_value_keeps_the_type_and_metadata(nnx: Any, data: st.DataObject) -> None:
    variable = data.draw(strategies.variables(nnx), label="variable")
    before = variable_entry(variable)
    variable[...] = variable[...] + 1
    after = variable_entry(variable)
    expected = (np.asarray(before.values) + 1).tolist()
    assert after.values == expected, f"after v[...] = v[...] + 1, v holds {after.values}, expected {expected}"
    assert (after.type, after.metadata, after.dtype, after.shape) == (
        before.type,
        before.metadata,
        before.dtype,
        before.shape,
    ), f"setting the value changed the Variable from {before} to {after}"


@pytest.mark.apis("Variable")
@given(data=st.data())
def test_jax_tree_map_over_a_variable_gives_a_new_variable_of_the_same_type_and_metadata(
    nnx: Any, data: st.DataObject
) -> None:
    variable = data.draw(strategies.variables(nnx), label="variable")
    mapped = jax.tree.map(lambda x: x * 3, variable)
    before, after = variable_entry(variable), variable_entry(mapped)
    assert mapped is not variable, "jax.tree.map returned the same Variable object, expected a new one"
    expected = before._replace(values=(np.asarray(before.values) * 3).tolist())
    assert after == expected, f"jax.tree.map(lambda x: 3 * x, v) gave {after}, expected {expected}"
    assert len(jax.tree.leaves(variable)) == 1, (
        f"a Variable has the leaves {jax.tree.leaves(variable)}, expected its value only"
    )


@pytest.mark.apis("variable_name_from_type", "variable_type_from_name")
@pytest.mark.parametrize("type_name", sorted(DOCUMENTED_NAMES))
def test_collection_names_and_variable_types_map_to_each_other(nnx: Any, type_name: str) -> None:
    variable_type = getattr(nnx, type_name)
    name = nnx.variable_name_from_type(variable_type)
    assert name == DOCUMENTED_NAMES[type_name], (
        f"variable_name_from_type({type_name}) is {name!r}, expected {DOCUMENTED_NAMES[type_name]!r}"
    )
    back = nnx.variable_type_from_name(name)
    assert back is variable_type, f"variable_type_from_name({name!r}) is {back!r}, expected {type_name}"
