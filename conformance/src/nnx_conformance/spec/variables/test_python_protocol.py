"""Differential tests of a Variable under Python's operators and builtins: arithmetic,
comparisons, ``round``/``math.floor``/``bool``/``len``/``int``/``iter``/``in``, calls,
NumPy conversion, attributes read through to the value (``copy.deepcopy``'s
``__deepcopy__`` too), over values of every kind a Variable holds (JAX and NumPy arrays and
scalars, Python numbers, a list); attributes read through a ref or hooked Variable; setting
and deleting attributes.

flax 0.12.12 hands each operator it defines to the same method of the value (so a value
without it raises that value's ``AttributeError``), defines no ordering comparisons, no
``__bool__`` (truth goes through ``__len__``) and, on a plain Variable, no ``divmod``; the
docs are silent, so this is the spec. Attributes a Variable does not define are read from the
value it stores: past its hooks, and on a ref Variable from the ``jax.Ref`` itself. A hijax Variable holds other
values than JAX arrays
as JAX's typed literals (``TypedFloat``, ``TypedNdArray`` of JAX's default dtypes), which
its operators then act on (``test_hijax.py`` checks what it stores)."""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("variables")]


class Use(NamedTuple):
    """One use of a Variable ``v`` (``w``: a second Variable holding the same value)."""

    name: str
    apply: Callable[[Any, Any], Any]


def _in_place(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(v: Any, w: Any) -> Any:
        v = op(v, 1)
        return v

    return apply


USES = [
    *(
        Use(f"{symbol} with a number", lambda v, w, op=op: op(v, 2))
        for symbol, op in [
            ("+", operator.add),
            ("-", operator.sub),
            ("*", operator.mul),
            ("/", operator.truediv),
            ("//", operator.floordiv),
            ("%", operator.mod),
            ("**", operator.pow),
            ("&", operator.and_),
            ("|", operator.or_),
            ("^", operator.xor),
            ("<<", operator.lshift),
            (">>", operator.rshift),
            ("divmod", divmod),
            ("<", operator.lt),
            ("<=", operator.le),
            (">", operator.gt),
            (">=", operator.ge),
            ("==", operator.eq),
            ("!=", operator.ne),
        ]
    ),
    *(
        Use(f"{symbol} with a number on the left", lambda v, w, op=op: op(2, v))
        for symbol, op in [
            ("+", operator.add),
            ("-", operator.sub),
            ("**", operator.pow),
            ("<<", operator.lshift),
            ("divmod", divmod),
            ("<", operator.lt),
        ]
    ),
    *(
        Use(f"{symbol} with another Variable", lambda v, w, op=op: op(v, w))
        for symbol, op in [
            ("+", operator.add),
            ("@", operator.matmul),
            ("==", operator.eq),
            ("<", operator.lt),
        ]
    ),
    *(
        Use(f"{symbol}= in place", _in_place(op))
        for symbol, op in [
            ("+", operator.iadd),
            ("<<", operator.ilshift),
            (">>", operator.irshift),
            ("@", operator.imatmul),
        ]
    ),
    Use("three-argument pow", lambda v, w: pow(v, 2, 5)),
    Use("unary -", lambda v, w: -v),
    Use("unary +", lambda v, w: +v),
    Use("abs", lambda v, w: abs(v)),
    Use("~", lambda v, w: ~v),
    Use("round", lambda v, w: round(v)),
    Use("round to one digit", lambda v, w: round(v, 1)),
    Use("math.floor", lambda v, w: math.floor(v)),
    Use("math.ceil", lambda v, w: math.ceil(v)),
    Use("math.trunc", lambda v, w: math.trunc(v)),
    Use("bool", lambda v, w: bool(v)),
    Use("len", lambda v, w: len(v)),
    Use("int", lambda v, w: int(v)),
    Use("float", lambda v, w: float(v)),
    Use("complex", lambda v, w: complex(v)),
    Use("an index into a list", lambda v, w: list(range(9))[v]),
    Use("iteration", lambda v, w: list(v)),
    Use("in", lambda v, w: 1 in v),
    Use("a call", lambda v, w: v()),
    Use("np.asarray", lambda v, w: (np.asarray(v).dtype.str, np.asarray(v).shape)),
    Use("jnp.asarray", lambda v, w: jnp.asarray(v)),
    Use("the value's __array__ read as an attribute", lambda v, w: callable(v.__array__)),
    Use("the value's shape read as an attribute", lambda v, w: v.shape),
    Use("the value's sum method", lambda v, w: v.sum()),
    Use("hash", lambda v, w: hash(v) is not None),
    Use("the value's T read as an attribute", lambda v, w: v.T),
]

VALUES: dict[str, Callable[[], Any]] = {
    "a float JAX vector": lambda: jnp.array([1.5, -2.0, 3.0]),
    "a float JAX scalar": lambda: jnp.array(1.5),
    "an int JAX vector": lambda: jnp.array([3, 4, 5]),
    "an int JAX scalar": lambda: jnp.array(3),
    "a NumPy array": lambda: np.array([1.5, 2.5]),
    "a NumPy scalar": lambda: np.float32(2.5),
    "a Python float": lambda: 2.5,
    "a Python int": lambda: 7,
    "a list": lambda: [1, 2],
}
HELD = [(kind, hijax) for kind in VALUES for hijax in (False, True)]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("use", USES, ids=[use.name for use in USES])
@pytest.mark.parametrize(("value", "hijax"), HELD, ids=[f"{kind}{' (hijax)' if h else ''}" for kind, h in HELD])
def test_a_variable_under_python_operators_acts_as_flax_s(
    nnx: Any, flax_nnx: Any, use: Use, value: str, hijax: bool
) -> None:
    """The result, or the class of the error, is flax's."""

    def used(n: Any) -> Any:
        return use.apply(n.Param(VALUES[value](), hijax=hijax), n.Param(VALUES[value](), hijax=hijax))

    assert_same(flax_nnx, nnx, used)


TRACED = [kind for kind in VALUES if "JAX" in kind]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("use", USES, ids=[use.name for use in USES])
@pytest.mark.parametrize("value", TRACED)
def test_a_hijax_variable_traced_by_jit_under_python_operators_acts_as_flax_s(
    nnx: Any, flax_nnx: Any, use: Use, value: str
) -> None:
    """Inside ``jax.jit`` a hijax Variable is a tracer of its own type: its operators give
    flax's result, or an error of flax's class."""

    def used(n: Any) -> Any:
        held = n.Param(VALUES[value](), hijax=True), n.Param(VALUES[value](), hijax=True)
        return jax.jit(lambda v, w: use.apply(v, w))(*held)

    assert_same(flax_nnx, nnx, used)


# flax's hijax Variable holding a Python number or a list recurses without end under
# copy.deepcopy (RecursionError): a crash, not a rule, so those are not drawn here.
DEEP_COPIED = [(kind, hijax) for kind, hijax in HELD if not hijax or "JAX" in kind or "NumPy" in kind]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("twice", [False, True], ids=["alone", "twice in a list"])
@pytest.mark.parametrize(
    ("value", "hijax"), DEEP_COPIED, ids=[f"{kind}{' (hijax)' if h else ''}" for kind, h in DEEP_COPIED]
)
def test_deepcopy_of_a_variable_gives_what_flax_s_gives(
    nnx: Any, flax_nnx: Any, value: str, hijax: bool, twice: bool
) -> None:
    """The value's ``__deepcopy__`` where it has one (an array: the copy is an array), else a
    Variable copied as pickle copies it."""

    def copied(n: Any) -> Any:
        variable = n.Param(VALUES[value](), hijax=hijax)
        if not twice:
            return copy.deepcopy(variable)
        both = copy.deepcopy([variable, variable])
        return both, both[0] is both[1]

    assert_same(flax_nnx, nnx, copied)


TRACED_READS = ["T", "mT", "ndim", "nbytes", "reshape", "shape", "sum", "tag", "missing"]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("name", TRACED_READS)
def test_an_attribute_read_through_a_traced_hijax_variable_is_flax_s(nnx: Any, flax_nnx: Any, name: str) -> None:
    """Inside ``jit`` a hijax Variable's tracer reads metadata and the value's attributes, but
    not the shape, dtype, ndim or size of its own type; the type read, or flax's error."""

    def read(n: Any) -> Any:
        seen: list[str] = []

        def body(variable: Any) -> Any:
            seen.append(type(getattr(variable, name)).__name__)
            return variable.get_value()

        jax.jit(body)(n.Param(jnp.arange(3.0), hijax=True, tag="t"))
        return seen

    assert_same(flax_nnx, nnx, read)


def _hooked(variable: Any, value: Any) -> Any:
    """An ``on_get_value`` hook that changes the shape (module level: one function in both runs)."""
    return value[None]


HOLDERS: dict[str, Callable[[Any], Any]] = {
    "a ref Variable": lambda n: n.Param(jnp.arange(3.0), ref=True),
    "a hooked Variable": lambda n: n.Param(jnp.arange(3.0), on_get_value=_hooked),
    "a ref and hooked Variable": lambda n: n.Param(jnp.arange(3.0), ref=True, on_get_value=_hooked),
}
READ_THROUGH = ["T", "__array__", "__deepcopy__", "at", "aval", "dtype", "item", "ndim", "real", "shape", "size", "sum"]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("name", READ_THROUGH)
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_an_attribute_read_through_a_ref_or_hooked_variable_is_flax_s(
    nnx: Any, flax_nnx: Any, holder: str, name: str
) -> None:
    """The attribute's type, and its value where it is data, or flax's error."""

    def read(n: Any) -> Any:
        found = getattr(HOLDERS[holder](n), name)
        return type(found).__name__, found if isinstance(found, (tuple, int, jax.Array, np.dtype)) else None

    assert_same(flax_nnx, nnx, read)


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("name", ["tag", "_private", "shape", "value", "missing"])
def test_deleting_an_attribute_of_a_variable_is_refused_naming_del_metadata_as_flax(
    nnx: Any, flax_nnx: Any, name: str
) -> None:
    def delete(n: Any) -> Any:
        variable = n.Param(jnp.ones(2), tag="t")
        delattr(variable, name)
        return variable

    assert_same(flax_nnx, nnx, delete, mentions=("del_metadata",))


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("name", ["tag", "_private", "shape", "missing"])
def test_setting_an_attribute_of_a_variable_is_refused_naming_set_metadata_as_flax(
    nnx: Any, flax_nnx: Any, name: str
) -> None:
    def assign(n: Any) -> Any:
        variable = n.Param(jnp.ones(2), tag="t")
        setattr(variable, name, 1)
        return variable

    assert_same(flax_nnx, nnx, assign, mentions=("set_metadata",))
