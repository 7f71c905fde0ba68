"""Parity with flax.nnx of the less common ways to make and query a Variable: the
``var_defaults()`` mapping, a ``VariableMetadata`` value that names ``hijax``, ``ref`` or
``eager_sharding``, a ``jax.Ref`` given as the value, hooks a Variable class defines as
methods, ``with_metadata`` hooks given as sequences, the deprecated ``sharding`` and
``raw_value`` names, ``get_metadata``'s argument checks, ``copy_from`` of itself,
``del variable[key]`` and ``variable_name_from_type(..., allow_register=True)``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("var_defaults")
@pytest.mark.documented(None)
def test_var_defaults_reads_as_a_mapping_of_hijax_and_ref_as_flax_s(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        defaults = nnx.var_defaults()
        return dict(defaults), len(defaults), list(defaults), defaults["hijax"], defaults["ref"]

    assert_same(flax_nnx, nnx, scenario)


def _in_a_new_thread(run: Callable[[], Any]) -> Any:
    """What ``run()`` returns (or raises) in a thread of its own, where no defaults were set."""
    done: list[Any] = []

    def target() -> None:
        try:
            done.append(run())
        except Exception as error:  # noqa: BLE001 - the error is the outcome, raised in the caller's thread
            done.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if isinstance(done[0], Exception):
        raise done[0]
    return done[0]


@pytest.mark.apis("var_defaults")
@pytest.mark.documented(None)
@pytest.mark.parametrize("form", ["decorator", "context manager"])
def test_var_defaults_set_in_a_fresh_thread_hold_only_where_they_apply_as_flax(
    nnx: Any, flax_nnx: Any, form: str
) -> None:
    """In a thread that never set them, the defaults given hold inside the decorated
    function (or the ``with`` block) and are gone after it."""

    def run(nnx: Any) -> Any:
        def made() -> Any:
            param = nnx.Param(jnp.ones(1))
            return param.hijax, param.ref, dict(nnx.var_defaults())

        before = dict(nnx.var_defaults())
        if form == "decorator":
            inside = nnx.var_defaults(hijax=True, ref=True)(made)()
        else:
            with nnx.var_defaults(hijax=True, ref=True):
                inside = made()
        return before, inside, dict(nnx.var_defaults())

    assert_same(flax_nnx, nnx, lambda nnx: _in_a_new_thread(lambda: run(nnx)))


REQUIRED = {"hijax": True, "ref": True, "eager_sharding": False}
GIVEN = {
    "in the VariableMetadata alone": lambda key: None,
    "in both, equal": lambda key: REQUIRED[key],
    "in both, unequal": lambda key: not REQUIRED[key],
}


@pytest.mark.apis("Variable", "VariableMetadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("given", GIVEN)
@pytest.mark.parametrize("key", sorted(REQUIRED))
def test_a_variable_metadata_value_naming_a_required_key_is_taken_or_refused_as_flax(
    nnx: Any, flax_nnx: Any, key: str, given: str
) -> None:
    """A ``VariableMetadata`` whose metadata names ``hijax``, ``ref`` or ``eager_sharding``
    makes the Variable so; the constructor's argument may repeat it but not contradict it
    (ValueError naming the key)."""
    argument = GIVEN[given](key)

    def scenario(nnx: Any) -> Any:
        value = nnx.VariableMetadata(jnp.arange(3.0), metadata={key: REQUIRED[key], "tag": "t"})
        variable = nnx.Param(value, **({} if argument is None else {key: argument}))
        return type(variable).__name__, variable.hijax, variable.ref, sorted(variable.get_metadata()), variable[...]

    assert_same(flax_nnx, nnx, scenario, mentions=(key,))


REF_VALUES: dict[str, Callable[[], Any]] = {
    "a Ref": lambda: jax.new_ref(jnp.ones(2)),
    "a dict holding a Ref": lambda: {"a": jnp.ones(1), "b": jax.new_ref(jnp.ones(2))},
}


@pytest.mark.apis("Variable", "Param")
@pytest.mark.documented(None)
@pytest.mark.parametrize("value", REF_VALUES)
@pytest.mark.parametrize("ref", [False, True], ids=["ref=False", "ref=True"])
def test_a_variable_refuses_a_ref_given_as_its_value_as_flax(nnx: Any, flax_nnx: Any, value: str, ref: bool) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: nnx.Param(REF_VALUES[value](), ref=ref), mentions=("Ref",))


@pytest.mark.apis("Variable", "Variable.add_axis", "Variable.remove_axis")
@pytest.mark.documented(None)
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
def test_hooks_a_variable_class_defines_as_methods_run_as_flax_s(nnx: Any, flax_nnx: Any, hijax: bool) -> None:
    """A subclass's ``on_get_value``, ``on_set_value``, ``on_create_value``, ``on_add_axis``
    and ``on_remove_axis`` methods become its hooks (with flax's deprecation warning)."""

    def scenario(nnx: Any) -> Any:
        seen: list[Any] = []

        class Hooked(nnx.Param):
            def on_get_value(self, value: Any) -> Any:
                return value * 2

            def on_set_value(self, value: Any) -> Any:
                return value + 1

            def on_create_value(self, value: Any) -> Any:
                return value * 10

            def on_add_axis(self, axis_index: int, axis_name: Any) -> None:
                seen.append(("add", axis_index, axis_name))

            def on_remove_axis(self, axis_index: int, axis_name: Any) -> None:
                seen.append(("remove", axis_index, axis_name))

        variable = Hooked(jnp.ones(2), hijax=hijax)
        made = variable[...], variable.get_raw_value()
        variable[...] = jnp.zeros(2)
        variable.add_axis(0, "batch")
        variable.remove_axis(1, None)
        return made, variable[...], variable.get_raw_value(), seen, sorted(variable.get_metadata())

    assert_same(flax_nnx, nnx, scenario, same_warnings=True)


@pytest.mark.apis("with_metadata", "Variable.add_axis", "Variable.remove_axis")
@pytest.mark.documented(None)
@pytest.mark.parametrize("container", [list, tuple], ids=["lists", "tuples"])
def test_with_metadata_hooks_given_as_sequences_run_in_order_as_flax_s(
    nnx: Any, flax_nnx: Any, container: type
) -> None:
    def scenario(nnx: Any) -> Any:
        seen: list[Any] = []

        def note(tag: str) -> Callable[..., None]:
            return lambda variable, index, name: seen.append((tag, index, name))

        init = nnx.with_metadata(
            lambda key, shape: jnp.ones(shape),
            on_create_value=container([lambda v, x: x * 3, lambda v, x: x + 1]),
            on_get_value=container([lambda v, x: x * 2, lambda v, x: x - 1]),
            on_set_value=container([lambda v, x: x + 5]),
            on_add_axis=container([note("add 1"), note("add 2")]),
            on_remove_axis=container([note("remove 1"), note("remove 2")]),
        )
        variable = nnx.Param(init(jax.random.key(0), (2,)))
        made = variable[...], variable.get_raw_value()
        variable[...] = jnp.zeros(2)
        variable.add_axis(1, "rows")
        variable.remove_axis(0, "rows")
        return made, variable[...], variable.get_raw_value(), seen

    assert_same(flax_nnx, nnx, scenario, same_warnings=True)


DEPRECATED_NAMES: dict[str, Callable[[Any], Any]] = {
    "Param(sharding=...)": lambda nnx: nnx.Param(jnp.ones(2), sharding=("a",), eager_sharding=False),
    "set_metadata('sharding', ...)": lambda nnx: _set(nnx, lambda v: v.set_metadata("sharding", ("a",))),
    "set_metadata('sharding_names', ...)": lambda nnx: _set(nnx, lambda v: v.set_metadata("sharding_names", ("a",))),
    "reading .raw_value": lambda nnx: nnx.Param(jnp.arange(2.0)).raw_value,
    "setting .raw_value": lambda nnx: _set(nnx, lambda v: setattr(v, "raw_value", jnp.zeros(2))),
}


def _set(nnx: Any, write: Callable[[Any], Any]) -> Any:
    variable = nnx.Param(jnp.ones(2), eager_sharding=False)
    write(variable)
    return variable


@pytest.mark.apis("Variable", "Variable.set_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("use", DEPRECATED_NAMES)
def test_a_deprecated_name_works_and_warns_as_flax_s(nnx: Any, flax_nnx: Any, use: str) -> None:
    """``sharding`` (and ``sharding_names``) are stored as ``out_sharding``; ``raw_value``
    reads the stored value; each with a DeprecationWarning."""
    deprecated = "raw_value" if "raw_value" in use else "sharding"
    assert_same(flax_nnx, nnx, DEPRECATED_NAMES[use], deprecated=(deprecated,), same_warnings=True)


GET_METADATA_CALLS: dict[str, Callable[[Any], Any]] = {
    "exclude_required=True": lambda v: v.get_metadata(exclude_required=True),
    "exclude_required=False": lambda v: v.get_metadata(exclude_required=False),
    "a name and exclude_required=True": lambda v: v.get_metadata("tag", exclude_required=True),
    "a name and exclude_required=False": lambda v: v.get_metadata("tag", exclude_required=False),
    "a default without a name": lambda v: v.get_metadata(default=1),
    "a default of None without a name": lambda v: v.get_metadata(default=None),
}


@pytest.mark.apis("Variable.get_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
@pytest.mark.parametrize("call", GET_METADATA_CALLS)
def test_get_metadata_takes_and_refuses_the_arguments_flax_s_does(
    nnx: Any, flax_nnx: Any, call: str, hijax: bool
) -> None:
    """``exclude_required=True`` leaves out hijax, ref and eager_sharding; a name with
    ``exclude_required``, or a default without a name, is a TypeError."""

    def scenario(nnx: Any) -> Any:
        return GET_METADATA_CALLS[call](nnx.Param(jnp.ones(2), tag="t", hijax=hijax))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Variable.copy_from")
@pytest.mark.documented(None)
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
def test_copy_from_itself_leaves_a_variable_as_it_was_as_flax(nnx: Any, flax_nnx: Any, hijax: bool) -> None:
    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.arange(3.0), tag="t", hijax=hijax)
        variable.copy_from(variable)
        return variable, variable.get_metadata()

    assert_same(flax_nnx, nnx, scenario)


DELETED: dict[str, tuple[Callable[[], Any], Any]] = {
    "a dict's key": (lambda: {"a": 1, "b": 2}, "a"),
    "a list's item": (lambda: [1, 2, 3], 1),
    "a list's slice": (lambda: [1, 2, 3], slice(0, 2)),
    "a missing key": (lambda: {"a": 1}, "b"),
    "a JAX array's item": (lambda: jnp.arange(3), 0),
}


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("what", DELETED)
def test_deleting_an_item_of_a_variable_deletes_it_from_its_value_as_flax(nnx: Any, flax_nnx: Any, what: str) -> None:
    make, key = DELETED[what]

    def scenario(nnx: Any) -> Any:
        variable = nnx.Variable(make())
        del variable[key]
        return variable.get_value()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("variable_name_from_type", "variable_type_from_name")
@pytest.mark.documented(None)
@pytest.mark.parametrize("second", ["the same type again", "another type of the same name"])
def test_variable_name_from_type_registers_a_new_type_by_its_class_name_as_flax(
    nnx: Any, flax_nnx: Any, second: str
) -> None:
    """With ``allow_register=True`` a new type is registered under its class name, and that
    name leads back to it; another type of that name is then refused (ValueError)."""

    def scenario(nnx: Any) -> Any:
        name = f"Fresh_{uuid.uuid4().hex}"  # a name of its own in each run: registries outlive a run
        fresh = type(name, (nnx.Variable,), {})
        registered = nnx.variable_name_from_type(fresh, allow_register=True)
        back = nnx.variable_type_from_name(registered) is fresh
        other = fresh if second == "the same type again" else type(name, (nnx.Variable,), {})
        return registered == name, back, nnx.variable_name_from_type(other, allow_register=True) == name

    assert_same(flax_nnx, nnx, scenario)
