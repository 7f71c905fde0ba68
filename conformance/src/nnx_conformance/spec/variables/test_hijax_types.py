"""What a hijax Variable (``hijax=True``) is as a Python object: a Variable of the type it
was made as. ``Variable``'s docstring makes it the base class of every Variable type and
custom types its subclasses, so a hijax Param is of a class derived from ``Param`` and
``Variable``, and a custom type keeps its methods in hijax mode, made directly or switched
to it by ``with_vars``. flax 0.12.12 gives every hijax Variable one class outside that
hierarchy (an instance of each type only through its metaclass) and drops a custom type's
methods (``expectations/flax.txt``)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = [pytest.mark.kind("property"), pytest.mark.area("variables")]

DOCSTRING = "flax.nnx.Variable (the base class for all Variable types; custom types by subclassing it)"


def _scaled_param(nnx: Any) -> type:
    """A custom Param type with a method of its own."""

    class ScaledParam(nnx.Param):
        def doubled(self) -> Any:
            return self[...] * 2

    return ScaledParam


@pytest.mark.apis("Variable", "Param", "BatchStat")
@pytest.mark.documented(DOCSTRING)
@pytest.mark.parametrize("variable_type", ["Param", "BatchStat", "custom"])
def test_a_hijax_variable_s_class_derives_from_the_type_it_was_made_as(nnx: Any, variable_type: str) -> None:
    cls = _scaled_param(nnx) if variable_type == "custom" else getattr(nnx, variable_type)
    variable = cls(jnp.arange(3.0), hijax=True)
    assert issubclass(type(variable), cls), (
        f"a hijax {cls.__name__} is of a class derived from {cls.__name__}, got {type(variable).__mro__}"
    )
    assert issubclass(type(variable), nnx.Variable), (
        f"Variable is the base class of every Variable type, hijax ones too, got {type(variable).__mro__}"
    )


@pytest.mark.apis("Variable", "Param", "with_vars")
@pytest.mark.documented(DOCSTRING)
@pytest.mark.parametrize("made", ["made hijax", "switched by with_vars"])
def test_a_custom_variable_type_keeps_its_methods_in_hijax_mode(nnx: Any, made: str) -> None:
    cls = _scaled_param(nnx)
    if made == "made hijax":
        variable = cls(jnp.arange(3.0), hijax=True)
    else:
        variable = nnx.with_vars(cls(jnp.arange(3.0)), hijax=True)
    assert variable.hijax, f"the Variable {made} is in hijax mode"
    assert jnp.array_equal(variable.doubled(), jnp.arange(3.0) * 2), (
        "a custom Variable type's own method works on a hijax Variable of that type"
    )
