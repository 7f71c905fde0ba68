"""Parity of Variables with flax.nnx: reprs, copy.copy, copies of ref Variables, pickling, has_metadata,
the metadata set_metadata and del_metadata may not change (hijax, ref),
``from_metadata`` given some of the required keys, metadata drawn over the
documented Variable types, a Variable made with an ``out_sharding`` (and a ``mesh``), and what
``variable[index] = value`` stores (dtype, weak type, the array itself or a copy)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

PICKLABLE_TYPES = tuple(name for name in gs.VARIABLE_TYPES if name != "Counter")


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
@given(
    type_name=st.sampled_from(gs.VARIABLE_TYPES),
    keys=st.lists(st.sampled_from(["hijax", "ref", "eager_sharding", "tag"]), unique=True),
    read=st.sampled_from(["hijax", "ref", "eager_sharding", "tag"]),
)
def test_from_metadata_with_some_of_the_required_keys_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, type_name: str, keys: list[str], read: str
) -> None:
    """``from_metadata`` keeps exactly the metadata given; without ``hijax`` flax refuses it
    (KeyError), and reading a property whose key is missing raises as flax's does."""
    values = {"hijax": False, "ref": False, "eager_sharding": True, "tag": "t"}

    def scenario(nnx: Any) -> Any:
        variable = gs.variable_type(nnx, type_name).from_metadata(jnp.arange(2.0), {k: values[k] for k in keys})
        return type(variable).__name__, sorted(variable.get_metadata()), variable[...], getattr(variable, read)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Variable", "Linear")
@pytest.mark.documented(None)
@given(recipe=gs.variable_recipes(types=PICKLABLE_TYPES))
def test_a_pickled_variable_and_module_come_back_as_in_flax(nnx: Any, flax_nnx: Any, recipe: gs.VariableRecipe) -> None:
    """A Variable, alone and held by a Module, survives a pickle round trip: type, value and
    metadata, and the copy is a new, updatable object. (A class made at run time, as the
    drawn graphs' ``Counter``, cannot be pickled by name.)"""

    def scenario(nnx: Any) -> Any:
        variable = gs.variable_type(nnx, recipe.type_name)(jnp.asarray(recipe.value), **dict(recipe.metadata))
        layer = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        layer.extra = variable
        again = pickle.loads(pickle.dumps(layer))
        again.extra[...] = again.extra[...] + 1
        alone = pickle.loads(pickle.dumps(variable))
        return again.extra, sorted(again.extra.get_metadata()), again.kernel, again(jnp.ones((1, 2))), alone, variable

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, "flax pickles Variables and Modules"


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("how", ["copy", "copy with a value", "replace with a value", "to_state", "copy.copy"])
def test_a_copy_of_a_ref_variable_holds_a_ref_of_its_own_as_in_flax(nnx: Any, flax_nnx: Any, how: str) -> None:
    """Copying a ``ref=True`` Variable with its ``copy``/``replace``/``to_state`` methods, with its
    value or a new one, gives a Variable whose value is a ``jax.Ref`` of its own; ``copy.copy``
    is shallow and shares the original's Ref."""

    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.ones(2), ref=True)
        made = {
            "copy": lambda: variable.copy(),
            "copy with a value": lambda: variable.copy(jnp.zeros(2)),
            "replace with a value": lambda: variable.replace(jnp.zeros(2)),
            "to_state": lambda: variable.to_state(),
            "copy.copy": lambda: copy.copy(variable),
        }[how]()
        raw = made.get_raw_value()
        made[...] = made[...] + 5
        return type(raw).__name__, raw is variable.get_raw_value(), made, variable

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax copies ref Variables: {outcome.error!r}"


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("kind", ["plain", "ref", "hijax", "hooked", "a kilobyte", "1,000,001 bytes", "a megabyte"])
def test_a_variable_reprs_as_flax_s(nnx: Any, flax_nnx: Any, kind: str) -> None:
    """The repr shows the value as read (through an ``on_get_value`` hook), a ref Variable's
    value, the metadata in flax's order (by name for hijax Variables), and the size in the
    unit flax picks at its boundaries (1,000,000 bytes is still 1,000.0 KB)."""

    def scenario(nnx: Any) -> Any:
        options = {"b": 1, "a": 2} | {
            "ref": {"ref": True},
            "hijax": {"hijax": True},
            "hooked": {"on_get_value": _tripled},
        }.get(kind, {})
        value = {
            "a kilobyte": jnp.zeros(250),
            "1,000,001 bytes": jnp.zeros(1_000_001, jnp.int8),
            "a megabyte": jnp.zeros(250_000),
        }.get(kind, jnp.ones(2))
        return repr(nnx.Param(value, **options))

    assert_same(flax_nnx, nnx, scenario)


def _tripled(variable: Any, value: Any) -> Any:
    """An ``on_get_value`` hook (a module-level function: its repr is the same in both runs)."""
    return value * 3


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
def test_a_variable_takes_a_named_sharding_as_out_sharding(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
        variable = nnx.Param(jnp.ones(2), out_sharding=NamedSharding(mesh, PartitionSpec("x")))
        return variable[...], str(variable[...].sharding.spec)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("axis_type", ["Auto", "Explicit"])
def test_a_variable_with_mesh_metadata_is_placed_on_that_mesh_outside_any_mesh_context(
    nnx: Any, flax_nnx: Any, axis_type: str
) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",), axis_types=(getattr(jax.sharding.AxisType, axis_type),))
        variable = nnx.Param(jnp.ones(2), out_sharding=("x",), mesh=mesh)
        sharding = variable[...].sharding
        return variable[...], str(sharding.spec), sharding.mesh == mesh

    assert_same(flax_nnx, nnx, scenario)


SETS = {
    "same_shape_and_dtype": (lambda: jnp.array(1.0), lambda: jnp.zeros(()), ...),
    "python_scalar": (lambda: jnp.array(1.0), lambda: 0.0, ...),
    "other_dtype": (lambda: jnp.ones(2), lambda: jnp.zeros(2, jnp.float16), ...),
    "broadcast": (lambda: jnp.ones((2, 2)), lambda: jnp.zeros(2), ...),
    "empty_tuple_index": (lambda: jnp.array(1.0), lambda: jnp.zeros(()), ()),
    "slice_index": (lambda: jnp.ones(2), lambda: jnp.zeros(2), slice(None)),
    "numpy_value": (lambda: jnp.ones(2), lambda: np.zeros(2, np.float32), ...),
    "numpy_variable": (lambda: np.ones(2), lambda: jnp.zeros(2), ...),
    "jax_array_index": (lambda: jnp.ones(3), lambda: jnp.zeros(2), jnp.array([0, 2])),
    "numpy_scalar_index": (lambda: jnp.ones(3), lambda: 0.0, np.int64(1)),
    "numpy_array_index": (lambda: jnp.ones(3), lambda: jnp.zeros(2), np.array([0, 2])),
    "numpy_array_index_of_one_element": (lambda: jnp.ones(3), lambda: jnp.zeros(1), np.array([2])),
}


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(SETS))
def test_setting_a_variable_by_index_stores_what_flax_stores(nnx: Any, flax_nnx: Any, case: str) -> None:
    make_value, make_new, index = SETS[case]

    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(make_value())
        before, new = variable.get_raw_value(), make_new()
        variable[index] = new
        stored = variable.get_raw_value()
        return type(stored).__name__, stored, getattr(stored, "weak_type", None), stored is new, stored is before

    assert_same(flax_nnx, nnx, scenario)


READS = {
    "ellipsis": ...,
    "int": 1,
    "slice": slice(1, None),
    "jax_array_index": jnp.array([0, 2]),
    "numpy_array_index": np.array([0, 2]),
    "numpy_array_index_of_one_element": np.array([2]),
    "numpy_scalar_index": np.int64(1),
    "empty_tuple_index": (),
}


@pytest.mark.apis("Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(READS))
def test_reading_a_variable_by_index_gives_what_flax_gives(nnx: Any, flax_nnx: Any, case: str) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: nnx.Param(jnp.arange(3.0))[READS[case]])


GET_METADATA_DEFAULTS = {
    "None": lambda: None,
    "an int": lambda: 0,
    "a NumPy array": lambda: np.zeros(2),
    "a jax array": lambda: jnp.ones(2),
    "a list": lambda: [1, 2],
}


@pytest.mark.apis("Variable.get_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("default", sorted(GET_METADATA_DEFAULTS))
@pytest.mark.parametrize("present", [True, False], ids=["present", "missing"])
def test_get_metadata_gives_the_default_of_a_missing_entry_as_flax(
    nnx: Any, flax_nnx: Any, default: str, present: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.ones(1), tag="t")
        given = GET_METADATA_DEFAULTS[default]()
        found = variable.get_metadata("tag" if present else "missing", given)
        return found, found is given

    assert_same(flax_nnx, nnx, scenario)


WRITES = {
    "v[...] = x": lambda n, v: v.__setitem__(..., jnp.zeros(2)),
    "v[0] = x": lambda n, v: v.__setitem__(0, 3.0),
    "set_value": lambda n, v: v.set_value(jnp.ones(2)),
    "copy_from a Param": lambda n, v: v.copy_from(n.Param(jnp.full((2,), 5.0))),
    "copy_from a hijax Param": lambda n, v: v.copy_from(n.Param(jnp.full((2,), 5.0), hijax=True)),
    "copy_from a BatchStat": lambda n, v: v.copy_from(n.BatchStat(jnp.full((2,), 5.0))),
    "copy_from its own type": lambda n, v: v.copy_from(v.type(jnp.full((2,), 6.0))),
    "raw_value = x": lambda n, v: setattr(v, "raw_value", jnp.zeros(2)),
}


@pytest.mark.apis("Variable.set_raw_value", "Variable.set_value", "Variable.copy_from")
@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
def test_which_writes_go_through_an_overridden_set_raw_value_as_in_flax(
    nnx: Any, flax_nnx: Any, hijax: bool, write: str
) -> None:
    """A subclass overriding ``set_raw_value`` sees the writes flax routes through it; the
    value after the write, or flax's error (``copy_from`` of another type)."""

    def scenario(n: Any) -> Any:
        seen: list[str] = []

        class Recorded(n.Param):
            def set_raw_value(self, value: Any, **kwargs: Any) -> None:
                seen.append("set_raw_value")
                super().set_raw_value(value, **kwargs)

        variable = Recorded(jnp.ones(2), hijax=hijax)
        WRITES[write](n, variable)
        return seen, variable[...]

    assert_same(flax_nnx, nnx, scenario)


METADATA_WRITES = {
    "set_metadata(hijax=...)": lambda v, new: v.set_metadata(hijax=new),
    "set_metadata(ref=...)": lambda v, new: v.set_metadata(ref=new),
    "set_metadata(eager_sharding=...)": lambda v, new: v.set_metadata(eager_sharding=new),
    "set_metadata('hijax', ...)": lambda v, new: v.set_metadata("hijax", new),
    "set_metadata('ref', ...)": lambda v, new: v.set_metadata("ref", new),
    "set_metadata of a dict with hijax": lambda v, new: v.set_metadata({**v.get_metadata(), "hijax": new}),
    "set_metadata of a dict with ref": lambda v, new: v.set_metadata({**v.get_metadata(), "ref": new}),
    "set_metadata of a dict with eager_sharding": lambda v, new: v.set_metadata(
        {**v.get_metadata(), "eager_sharding": new}
    ),
}
MADE_AS = {"plain": {}, "hijax": {"hijax": True}, "ref": {"ref": True}}


@pytest.mark.apis("Variable.set_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("changed", [False, True], ids=["the same value", "another value"])
@pytest.mark.parametrize("write", sorted(METADATA_WRITES))
@pytest.mark.parametrize("made", sorted(MADE_AS))
def test_set_metadata_keeps_what_a_variable_was_made_as_as_flax(
    nnx: Any, flax_nnx: Any, made: str, write: str, changed: bool
) -> None:
    """``hijax`` and ``ref`` cannot change (ValueError naming the key), nor can
    ``eager_sharding`` in a dict that replaces all metadata; the same value is accepted."""
    key = next(k for k in ("eager_sharding", "hijax", "ref") if k in write)

    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.ones(2), **MADE_AS[made])
        METADATA_WRITES[write](variable, variable.get_metadata(key) != changed)
        return type(variable).__name__, variable.get_metadata(), variable[...]

    assert_same(flax_nnx, nnx, scenario, mentions=(f"`{key}`",))


@pytest.mark.apis("Variable.del_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("key", ["hijax", "ref", "eager_sharding", "tag"])
def test_del_metadata_refuses_hijax_and_ref_as_flax(nnx: Any, flax_nnx: Any, key: str) -> None:
    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.ones(2), tag="t")
        variable.del_metadata(key)
        return variable.get_metadata()

    assert_same(flax_nnx, nnx, scenario, mentions=(f"`{key}`",))


@pytest.mark.apis("Variable.copy_from")
@pytest.mark.documented(None)
@pytest.mark.parametrize("source_hijax", [False, True], ids=["from a plain BatchStat", "from a hijax BatchStat"])
@pytest.mark.parametrize("target_hijax", [False, True], ids=["a plain Param", "a hijax Param"])
def test_copy_from_another_type_names_what_it_got_as_flax(
    nnx: Any, flax_nnx: Any, target_hijax: bool, source_hijax: bool
) -> None:
    """flax's ValueError names the source's type, as a plain Param sees a hijax one
    (``HijaxVariable``) and as a hijax Param sees any (its Variable type)."""
    got = "HijaxVariable" if source_hijax and not target_hijax else "BatchStat"

    def scenario(nnx: Any) -> Any:
        nnx.Param(jnp.ones(2), hijax=target_hijax).copy_from(nnx.BatchStat(jnp.ones(2), hijax=source_hijax))

    assert_same(flax_nnx, nnx, scenario, mentions=(f"got {got}",))


SET_METADATA_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "no arguments": ((), {}),
    "a name alone": (("tag",), {}),
    "a list of pairs": (([("tag", 1)],), {}),
    "a dict": (({"tag": 1, "other": 2},), {}),
    "None": ((None,), {}),
    "a name and a value": (("tag", 1), {}),
    "three arguments": (("a", "b", "c"), {}),
    "keywords": ((), {"tag": 1, "other": 2}),
    "a name, a value and a keyword": (("tag", 1), {"other": 2}),
    "a dict and a keyword": (({"tag": 1},), {"other": 2}),
}


@pytest.mark.apis("Variable.set_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", SET_METADATA_CALLS)
def test_set_metadata_takes_and_refuses_the_arguments_flax_s_does(nnx: Any, flax_nnx: Any, call: str) -> None:
    """One argument replaces all metadata as ``dict`` of it (its errors as ``dict``'s), two
    set one entry, keywords update; none, more than two, or positional and keyword
    arguments together are a TypeError."""
    args, kwargs = SET_METADATA_CALLS[call]

    def scenario(nnx: Any) -> Any:
        variable = nnx.Param(jnp.ones(2), tag=0)
        variable.set_metadata(*args, **kwargs)
        return variable.get_metadata()

    assert_same(flax_nnx, nnx, scenario)
