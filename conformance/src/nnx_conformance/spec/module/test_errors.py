"""Error conditions of Module helpers: attributes no Module has, views nothing accepts,
and sow into an attribute of another Variable type."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("error")


def _block(nnx: Any) -> Any:
    class Leaf(nnx.Module):
        def __init__(self) -> None:
            self.deterministic = False
            self.w = nnx.Param(jnp.ones(2))

    class Block(nnx.Module):
        def __init__(self) -> None:
            self.leaf = Leaf()
            self.other = nnx.Param(jnp.zeros(1))

    return Block()


@pytest.mark.apis("Module.set_attributes")
def test_set_attributes_raises_when_no_module_has_the_attribute(nnx: Any) -> None:
    with pytest.raises(
        ValueError, match=r"Could not find at least one instance of the following attributes: \['missing'\]"
    ):
        _block(nnx).set_attributes(missing=True)


@pytest.mark.apis("Module.set_attributes")
def test_set_attributes_ignores_missing_attributes_when_told_not_to_raise(nnx: Any) -> None:
    block = _block(nnx)
    block.set_attributes(missing=True, deterministic=True, raise_if_not_found=False)
    assert block.leaf.deterministic is True, "set_attributes should still set the attributes that exist"


@pytest.mark.apis("with_attributes")
def test_with_attributes_raises_when_no_module_has_the_attribute(nnx: Any) -> None:
    with pytest.raises(
        ValueError, match=r"Could not find at least one instance of the following attributes: \['missing'\]"
    ):
        nnx.with_attributes(_block(nnx), missing=True)


@pytest.mark.apis("view")
def test_view_raises_for_keyword_arguments_no_module_uses(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Unused keys found in nnx.view: \['missing'\]"):
        nnx.view(_block(nnx), missing=True)


@pytest.mark.apis("Module.sow")
def test_sow_into_an_attribute_holding_another_variable_type_raises(nnx: Any) -> None:
    block = _block(nnx)
    with pytest.raises(ValueError, match=r"to be of type 'Intermediate', got 'Param'"):
        block.sow(nnx.Intermediate, "other", jnp.ones(1))
