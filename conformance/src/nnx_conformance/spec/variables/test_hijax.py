"""Differential tests of what JAX sees of a hijax Variable (``hijax=True``): flax passes it
to JAX as one value of a hijax type of its own, not as a pytree of its value, so it is
its own leaf in ``jax.tree`` and one input of a non-array type in a jaxpr."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _kind(nnx: Any, value: Any) -> str:
    """What a value JAX hands over is: a Variable, an array, or something else."""
    if isinstance(value, nnx.Variable):
        return "Variable"
    return "array" if isinstance(value, jax.Array) else type(value).__name__


def _held(nnx: Any, hijax: bool, ref: bool) -> dict[str, Any]:
    """A Param (hijax or not, ref or not) beside a plain array, in a dict."""
    return {"param": nnx.Param(jnp.arange(3.0), hijax=hijax, ref=ref), "array": jnp.ones(2)}


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("hijax", [True, False], ids=["hijax", "plain"])
@pytest.mark.parametrize("ref", [True, False], ids=["ref", "value"])
def test_jax_tree_leaves_of_a_variable_are_what_flax_gives(nnx: Any, flax_nnx: Any, hijax: bool, ref: bool) -> None:
    def leaves(n: Any) -> list[str]:
        return [
            _kind(n, leaf) if not isinstance(leaf, jax.Ref) else "Ref" for leaf in jax.tree.leaves(_held(n, hijax, ref))
        ]

    assert_same(flax_nnx, nnx, leaves)


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("hijax", [True, False], ids=["hijax", "plain"])
def test_a_jaxpr_takes_a_variable_as_flax_passes_it(nnx: Any, flax_nnx: Any, hijax: bool) -> None:
    """A hijax Variable is one jaxpr input whose type is not an array's; a plain one is its array."""

    def inputs(n: Any) -> list[bool]:
        jaxpr = jax.make_jaxpr(lambda held: held["param"][...] * 2 + held["array"].sum())(_held(n, hijax, False))
        return [isinstance(var.aval, jax.core.ShapedArray) for var in jaxpr.jaxpr.invars]

    assert_same(flax_nnx, nnx, inputs)


_TRACED_READS: dict[str, Any] = {
    "its type": lambda v: v.type.__name__,
    "its value": lambda v: v.get_value(),
    "its value at an index": lambda v: v.get_value(index=1),
    "its value over a slice": lambda v: v.get_value(index=slice(0, 2)),
    "its metadata": lambda v: sorted(v.get_metadata().items()),
    "one metadata entry": lambda v: v.get_metadata("tag"),
    "a missing entry with a default": lambda v: v.get_metadata("missing", "default"),
    "a missing entry without a default": lambda v: v.get_metadata("missing"),
}


@pytest.mark.apis("Variable", "Variable.get_value", "Variable.get_metadata", "Param")
@pytest.mark.parametrize("read", list(_TRACED_READS), ids=list(_TRACED_READS))
def test_a_hijax_variable_traced_by_jit_reads_as_flax_s(nnx: Any, flax_nnx: Any, read: str) -> None:
    """Under ``jax.jit`` a hijax Variable is a tracer of its own type: its class, value (at
    an index too) and metadata read as flax's, and a missing metadata entry is a KeyError."""

    def traced(n: Any) -> Any:
        seen: list[Any] = []

        @jax.jit
        def body(v: Any) -> Any:
            seen.append(_TRACED_READS[read](v))
            return v.get_value()

        body(n.Param(jnp.arange(3.0), hijax=True, tag="t"))
        return jax.tree.map(lambda x: x.shape if isinstance(x, jax.core.Tracer) else x, seen[0])

    assert_same(flax_nnx, nnx, traced, mentions=("missing",) if "without" in read else ())


@pytest.mark.apis("Variable", "Param", "Module")
@pytest.mark.parametrize("variable_type", ["Param", "BatchStat"])
def test_a_hijax_variable_is_of_a_class_named_as_flax_s(nnx: Any, flax_nnx: Any, variable_type: str) -> None:
    """flax gives every hijax Variable one class, ``HijaxVariable``, that is an instance of
    the Variable type asked for and answers it as ``.type``; a Module totals it under that type."""

    def named(n: Any) -> Any:
        cls = getattr(n, variable_type)
        variable = cls(jnp.arange(3.0), hijax=True)
        holder = n.Linear(2, 3, rngs=n.Rngs(0))
        holder.extra = variable
        summary = repr(holder).splitlines()[0]
        return type(variable).__name__, variable.type.__name__, isinstance(variable, cls), summary

    assert_same(flax_nnx, nnx, named)


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("ref", [True, False], ids=["ref", "value"])
@pytest.mark.parametrize("how", ["v[...] = x", "v[0] = x", "set_value"])
def test_a_hijax_variable_traced_by_jit_refuses_writes_as_flax_s(nnx: Any, flax_nnx: Any, ref: bool, how: str) -> None:
    """Under ``jax.jit`` a hijax Variable's tracer takes no write: without a Ref flax raises
    its ImmutableVariableError; with one, JAX cannot write the Ref (a ValueError)."""

    def written(n: Any) -> Any:
        variable = n.Param(jnp.arange(3.0), hijax=True, ref=ref)

        @jax.jit
        def body(v: Any) -> Any:
            if how == "set_value":
                v.set_value(v.get_value() + 1)
            elif how == "v[0] = x":
                v[0] = 5.0
            else:
                v[...] = v[...] * 2
            return v.get_value()

        return body(variable), variable[...]

    outcome = assert_same(flax_nnx, nnx, written)
    assert outcome.error is not None, f"flax refuses a write ({how}) to a traced hijax Variable (ref={ref})"


def _variable_class(nnx: Any, name: str) -> type:
    """A Variable type by name: Param, BatchStat, or a subclass of Param of the test's own."""
    if name == "a Param subclass":
        return type("Tied", (nnx.Param,), {})
    return getattr(nnx, name)


VARIABLE_CLASSES = ["Param", "BatchStat", "a Param subclass"]
CHECKED_CLASSES = ["Variable", "Param", "BatchStat", "its own type"]


@pytest.mark.apis("Variable", "Param", "BatchStat")
@pytest.mark.parametrize("made", VARIABLE_CLASSES)
@pytest.mark.parametrize("checked", CHECKED_CLASSES)
def test_a_tracer_of_a_hijax_variable_is_an_instance_of_its_type_as_in_flax(
    nnx: Any, flax_nnx: Any, made: str, checked: str
) -> None:
    """Under ``jax.jit`` the function gets a tracer of the hijax Variable, which ``isinstance``
    takes for an instance of the Variable's type and its bases (and of no other)."""

    def scenario(nnx: Any) -> Any:
        cls = _variable_class(nnx, made)
        against = cls if checked == "its own type" else getattr(nnx, checked)
        seen = []

        def body(variable: Any) -> Any:
            seen.append((isinstance(variable, against), isinstance(variable, jax.core.Tracer)))
            return variable[...].sum()

        jax.jit(body)(cls(jnp.arange(3.0), hijax=True))
        return seen, isinstance(jnp.ones(2), against)

    assert_same(flax_nnx, nnx, scenario)


MADE_INSIDE = {
    "jax.jit": lambda make: jax.jit(make)(jnp.arange(3.0)),
    "jax.eval_shape": lambda make: jax.eval_shape(make, jnp.arange(3.0)),
    "jax.jit, returned in a dict": lambda make: jax.jit(lambda x: {"held": make(x)})(jnp.arange(3.0))["held"],
}


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("where", MADE_INSIDE)
@pytest.mark.parametrize("made", VARIABLE_CLASSES)
def test_a_hijax_variable_built_inside_a_jax_trace_can_be_returned_as_in_flax(
    nnx: Any, flax_nnx: Any, where: str, made: str
) -> None:
    """Built from a traced value, it is a tracer of its type, which the trace returns as a
    hijax Variable with its value and metadata (``jax.eval_shape``: as its abstract type,
    named as flax's)."""

    def scenario(nnx: Any) -> Any:
        cls = _variable_class(nnx, made)
        out = MADE_INSIDE[where](lambda x: cls(x * 2, hijax=True, tag="made inside"))
        if where == "jax.eval_shape":  # flax's abstract value answers only with aval properties
            return type(out).__name__
        return (
            type(out).__name__,
            out.type.__name__,
            isinstance(out, cls),
            isinstance(out, nnx.Variable),
            out[...],
            out.get_metadata("tag"),
        )

    assert_same(flax_nnx, nnx, scenario)


SWITCHES = {
    "copy(hijax=...)": lambda nnx, cls, hijax, to: cls(jnp.arange(3.0), hijax=hijax).copy(hijax=to),
    "replace(hijax=...)": lambda nnx, cls, hijax, to: cls(jnp.arange(3.0), hijax=hijax).replace(hijax=to),
    "from_metadata": lambda nnx, cls, hijax, to: cls.from_metadata(
        jnp.arange(3.0), {"hijax": to, "ref": False, "eager_sharding": False}
    ),
}


@pytest.mark.apis("Variable", "Variable.copy", "Variable.replace", "Variable.from_metadata")
@pytest.mark.documented(None)
@pytest.mark.parametrize("how", SWITCHES)
@pytest.mark.parametrize("made", VARIABLE_CLASSES)
@pytest.mark.parametrize(
    ("hijax", "to"),
    [(h, t) for h in (True, False) for t in (True, False)],
    ids=lambda flag: "hijax" if flag else "plain",
)
def test_a_copy_or_rebuild_switches_to_hijax_or_back_as_flax_s(
    nnx: Any, flax_nnx: Any, how: str, made: str, hijax: bool, to: bool
) -> None:
    """The Variable made is a hijax one exactly when its ``hijax`` metadata says so: its
    class, type, value and what ``jax.tree`` sees of it."""

    def scenario(nnx: Any) -> Any:
        cls = _variable_class(nnx, made)
        variable = SWITCHES[how](nnx, cls, hijax, to)
        leaves = [_kind(nnx, leaf) for leaf in jax.tree.leaves({"v": variable})]
        return type(variable).__name__, variable.type.__name__, variable.hijax, variable[...], leaves

    assert_same(flax_nnx, nnx, scenario)


OTHER_HIJAX = {
    "a Param of other values": lambda nnx, x: nnx.Param(x + 1, hijax=True),
    "a Param with other metadata": lambda nnx, x: nnx.Param(x, hijax=True, tag=1),
    "a Param of another shape": lambda nnx, x: nnx.Param(x[:2], hijax=True),
    "a BatchStat": lambda nnx, x: nnx.BatchStat(x, hijax=True),
}


@pytest.mark.apis("Variable", "Param")
@pytest.mark.documented(None)
@pytest.mark.parametrize("other", OTHER_HIJAX)
def test_the_jax_types_of_two_hijax_variables_compare_as_flax_s(nnx: Any, flax_nnx: Any, other: str) -> None:
    """Equal for the same Variable type, metadata and value shapes; a ``cond`` whose branches
    give hijax Variables of unequal types is JAX's TypeError."""

    def pair(nnx: Any) -> tuple[Any, Any]:
        x = jnp.arange(3.0)
        return nnx.Param(x, hijax=True), OTHER_HIJAX[other](nnx, x)

    def compared(nnx: Any) -> Any:
        first, second = (jax.typeof(v) for v in pair(nnx))
        return first == second, first != second, second == first, hash(first) == hash(second)

    assert_same(flax_nnx, nnx, compared)
    assert_same(flax_nnx, nnx, lambda nnx: jax.lax.cond(True, lambda a, b: a, lambda a, b: b, *pair(nnx)))


STORED = {
    "a NumPy array": lambda: np.array([1.5, 2.5]),
    "an int64 NumPy array": lambda: np.array([1, 2], dtype=np.int64),
    "a NumPy scalar": lambda: np.float64(2.5),
    "a Python float": lambda: 2.5,
    "a Python int": lambda: 3,
    "a Python bool": lambda: True,
    "a dict of numbers": lambda: {"a": 1.0, "b": 2},
    "a string": lambda: "text",
    "a JAX array": lambda: jnp.array([1.5, 2.5]),
}
WRITES = {
    "made with it": lambda n, made, value: n.Param(value(), hijax=True),
    "set_value": lambda n, made, value: (made.set_value(value()), made)[1],
    "v[...] = it": lambda n, made, value: (made.__setitem__(..., value()), made)[1],
    "with_vars(hijax=True) of a plain Variable": lambda n, made, value: n.with_vars(n.Param(value()), hijax=True),
    "copy": lambda n, made, value: n.Param(value(), hijax=True).copy(),
    "replace": lambda n, made, value: made.replace(value()),
}


@pytest.mark.apis("Variable", "Param", "with_vars")
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("value", list(STORED))
def test_a_hijax_variable_stores_a_value_as_flax_s(nnx: Any, flax_nnx: Any, value: str, write: str) -> None:
    """flax keeps the leaves of a hijax Variable's value as JAX takes a primitive's operands:
    NumPy arrays and Python numbers as JAX's typed literals of its default dtypes, what is no
    JAX type refused with ``TypeError``."""

    def stored(n: Any) -> Any:
        made = n.Param(jnp.zeros(2), hijax=True)
        variable = WRITES[write](n, made, STORED[value])
        raw = variable.get_raw_value()
        return raw, [type(leaf).__name__ for leaf in jax.tree.leaves(raw)]

    assert_same(flax_nnx, nnx, stored)


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("read", ["alpha", "beta", "zeta", "gamma (not given)"])
def test_a_hijax_variable_traced_by_jit_reads_its_metadata_by_name_as_flax_s(
    nnx: Any, flax_nnx: Any, read: str
) -> None:
    """Inside ``jax.jit`` a hijax Variable's metadata entries read by attribute name, each its own."""

    def scenario(n: Any) -> Any:
        variable = n.Param(jnp.ones(2), hijax=True, alpha=1, beta=2, zeta=3)
        return jax.jit(lambda v: getattr(v, read.split()[0]))(variable)

    assert_same(flax_nnx, nnx, scenario)
