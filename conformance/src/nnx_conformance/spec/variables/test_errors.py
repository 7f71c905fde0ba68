"""Error conditions of Variables: removed in-place operators, attributes that are not
metadata, missing metadata, the name registry, and mutation from another trace."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import raises_named

pytestmark = pytest.mark.kind("error")


@pytest.mark.apis("Param")
@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__"])
def test_in_place_operators_on_a_variable_raise_not_implemented(nnx: Any, op: str) -> None:
    # `variable += x` would rebind the name to an Array; NNX asks for `variable[...] += x`.
    variable = nnx.Param(jnp.ones(3))
    with pytest.raises(NotImplementedError, match=r"In-place operations are no longer supported for Variable"):
        getattr(variable, op)(1)


@pytest.mark.apis("Param")
def test_in_place_update_through_ellipsis_index_is_the_supported_form(nnx: Any) -> None:
    variable = nnx.Param(jnp.ones(3))
    variable[...] += 1
    assert variable[...].tolist() == [2.0, 2.0, 2.0], f"expected [2, 2, 2] after `v[...] += 1`, got {variable[...]}"


@pytest.mark.apis("Param")
def test_setting_an_unknown_attribute_on_a_variable_raises_and_points_to_set_metadata(nnx: Any) -> None:
    variable = nnx.Param(jnp.ones(3))
    with pytest.raises(AttributeError, match=r"(?s)Cannot set attribute foo.*set_metadata\(foo=value\)"):
        variable.foo = 1


@pytest.mark.apis("Variable.get_metadata", "Variable.del_metadata")
@pytest.mark.parametrize("method", ["get_metadata", "del_metadata"])
def test_missing_metadata_entries_raise_key_error(nnx: Any, method: str) -> None:
    variable = nnx.Param(jnp.ones(3), color="red")
    with pytest.raises(KeyError, match=r"missing"):
        getattr(variable, method)("missing")


@pytest.mark.apis("Variable.get_metadata")
def test_get_metadata_returns_the_default_instead_of_raising(nnx: Any) -> None:
    variable = nnx.Param(jnp.ones(3))
    assert variable.get_metadata("missing", 7) == 7, "get_metadata(name, default) should return the default"


@pytest.mark.apis("variable_name_from_type")
def test_variable_name_from_type_rejects_an_unregistered_type(nnx: Any) -> None:
    class Unregistered(nnx.Variable):
        pass

    with pytest.raises(ValueError, match=r"is not registered in the registry"):
        nnx.variable_name_from_type(Unregistered)


@pytest.mark.apis("variable_type_from_name")
def test_variable_type_from_name_rejects_an_unregistered_name(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Name no_such_collection is not registered in the registry"):
        nnx.variable_type_from_name("no_such_collection")


@pytest.mark.apis("register_variable_name")
def test_register_variable_name_refuses_to_remap_a_name_without_overwrite(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Name params already mapped to type"):
        nnx.register_variable_name("params", nnx.BatchStat)


@pytest.mark.apis("Param")
def test_writing_a_variable_from_inside_a_jax_transform_it_was_not_created_in_raises(nnx: Any) -> None:
    # A Variable captured by jax.jit belongs to the outer trace; writing a tracer into
    # it would leak the tracer.
    variable = nnx.Param(jnp.ones(2))

    @jax.jit
    def write(x: Any) -> Any:
        variable[...] = x
        return x

    with raises_named("TraceContextError", r"Cannot mutate Param from a different trace level"):
        write(jnp.zeros(2))


@pytest.mark.apis("Variable")
@pytest.mark.parametrize("route", ["argument", "closure"])
def test_updating_a_non_ref_hijax_variable_inside_jax_jit_raises_and_keeps_its_value(nnx: Any, route: str) -> None:
    # Without ref=True a hijax Variable is a value to JAX: a write inside the trace could
    # not reach the caller, so it is refused rather than lost.
    variable = nnx.Variable(jnp.arange(3), hijax=True)

    def increment(v: Any) -> None:
        v[...] += 1

    call = (lambda: jax.jit(increment)(variable)) if route == "argument" else jax.jit(lambda: increment(variable))
    with raises_named("ImmutableVariableError", r"Cannot update a non-ref .*inside JAX transformations.*use ref=True"):
        call()
    assert variable[...].tolist() == [0, 1, 2], f"the refused update changed the Variable to {variable[...]}"


@pytest.mark.apis("jit", "var_defaults")
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
def test_nnx_jit_refuses_updates_to_non_ref_hijax_variables_and_keeps_their_values(nnx: Any, graph: bool) -> None:
    with nnx.var_defaults(hijax=True):
        model = nnx.Dict(w=nnx.Param(jnp.zeros(2)))

    def step(m: Any) -> None:
        m.w[...] += 1

    with raises_named("ImmutableVariableError", r"Cannot update a non-ref .*inside JAX transformations"):
        nnx.jit(step, graph=graph)(model)
    assert model.w[...].tolist() == [0.0, 0.0], f"the refused update changed the Param to {model.w[...]}"
