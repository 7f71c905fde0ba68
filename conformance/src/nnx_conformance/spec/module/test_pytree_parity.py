"""Parity of Pytree attribute rules with flax.nnx: an array put into a static attribute
after ``__init__`` or under an ``nnx.static`` override is rejected with flax's
ValueError naming the attribute, a new array attribute after ``__init__`` is data, and
popping a Variable held directly in an ``nnx.List`` fails as in flax; data put into a
static attribute's container during ``__init__`` (or into an attribute set without
``__setattr__``) is refused once ``__init__`` returns; check_pytree accepts Pytrees and
rejects anything else with TypeError."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

OBJECT_PAGE = "api object page: static attributes hold no arrays (nnx.static, nnx.data)"


def _static(nnx: Any, init_value: Any) -> Any:
    class Holder(nnx.Module):
        def __init__(self) -> None:
            self.n = init_value(nnx)

    return Holder()


STATIC_ASSIGNMENTS = {
    "array_after_init": (lambda nnx: 3, jnp.ones(2)),
    "numpy_array_after_init": (lambda nnx: "relu", np.ones(2)),
    "array_after_a_static_override": (lambda nnx: nnx.static(3), jnp.ones(2)),
    "array_under_a_static_override": (lambda nnx: nnx.static(jnp.ones(2)), None),
}
"""(value set in __init__, array assigned after it or None): each puts an array into a static attribute."""


@pytest.mark.apis("Module", "static")
@pytest.mark.documented(OBJECT_PAGE)
@pytest.mark.parametrize("case", sorted(STATIC_ASSIGNMENTS))
def test_an_array_in_a_static_attribute_is_rejected_with_value_error(nnx: Any, flax_nnx: Any, case: str) -> None:
    init_value, later = STATIC_ASSIGNMENTS[case]

    def scenario(nnx: Any) -> Any:
        holder = _static(nnx, init_value)
        if later is not None:
            holder.n = later
        return holder

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("'n'",))
    assert isinstance(outcome.error, ValueError), "flax rejects an array in a static attribute with ValueError"


@pytest.mark.apis("Module", "state")
@pytest.mark.documented(OBJECT_PAGE)
def test_a_new_array_attribute_after_init_is_data(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        holder = gs.classes(nnx).node()
        holder.n = jnp.ones(2)
        return holder, nnx.state(holder)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Module", "state")
@pytest.mark.documented(None)
def test_an_attribute_set_past_the_module_s_setattr_is_static_as_in_flax(nnx: Any, flax_nnx: Any) -> None:
    """An array put in with ``object.__setattr__`` is not state: not in ``nnx.state``, not a
    JAX leaf, kept through split and merge as a static value."""

    def scenario(nnx: Any) -> Any:
        holder = gs.classes(nnx).node()
        holder.p = nnx.Param(jnp.zeros(2))
        object.__setattr__(holder, "extra", jnp.ones(3))
        merged = nnx.merge(*nnx.split(holder))
        return nnx.state(holder), len(jax.tree.leaves(holder)), merged.extra is holder.extra

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("pop", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("holder", ["a List", "a List in a Module"])
def test_popping_a_variable_held_directly_in_a_list_fails_as_in_flax(nnx: Any, flax_nnx: Any, holder: str) -> None:
    def scenario(nnx: Any) -> Any:
        variables = nnx.List([nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1))])
        root = variables if holder == "a List" else gs.classes(nnx).node(items=variables)
        return nnx.pop(root, nnx.BatchStat), root

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert isinstance(outcome.error, AttributeError), "flax's pop reaches the List item as an attribute and fails"


def _pytree(nnx: Any) -> Any:
    return gs.classes(nnx).record(x=jnp.ones(1))


PYTREES = {
    "Module": lambda nnx: nnx.Linear(1, 1, rngs=nnx.Rngs(0)),
    "List": lambda nnx: nnx.List([1]),
    "Pytree": _pytree,
}
NOT_PYTREES = {
    "dict": lambda nnx: {"a": 1},
    "Variable": lambda nnx: nnx.Param(jnp.ones(1)),
    "int": lambda nnx: 3,
    "list of Modules": lambda nnx: [nnx.Linear(1, 1, rngs=nnx.Rngs(0))],
}


@pytest.mark.apis("check_pytree")
@pytest.mark.documented("api object page: check_pytree checks that its argument is a valid Pytree")
@pytest.mark.parametrize("kind", sorted(PYTREES))
def test_check_pytree_accepts_a_pytree(nnx: Any, flax_nnx: Any, kind: str) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: nnx.check_pytree(PYTREES[kind](nnx)))
    assert outcome.error is None, f"flax's check_pytree accepts a {kind}"


@pytest.mark.apis("check_pytree")
@pytest.mark.documented("api object page: check_pytree checks that its argument is a valid Pytree")
@pytest.mark.parametrize("kind", sorted(NOT_PYTREES))
def test_check_pytree_rejects_what_is_not_a_pytree_with_type_error(nnx: Any, flax_nnx: Any, kind: str) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: nnx.check_pytree(NOT_PYTREES[kind](nnx)), mentions=("Pytree",))
    assert isinstance(outcome.error, TypeError), f"flax's check_pytree rejects a {kind} with TypeError"


@pytest.mark.apis("check_pytree")
@pytest.mark.documented("api object page: check_pytree checks that its argument is a valid Pytree")
@pytest.mark.parametrize("held_by", ["nothing", "a Sequential", "two Sequentials", "a List"])
@pytest.mark.parametrize("attribute", ["static", "never assigned"])
def test_check_pytree_checks_its_argument_s_own_static_attributes_as_flax(
    nnx: Any, flax_nnx: Any, held_by: str, attribute: str
) -> None:
    """Data put behind the Module's back in a static attribute, or in one never assigned
    through it, is refused (ValueError naming the attribute) where the Module is the
    argument; flax does not look into the Pytrees an argument holds."""

    def scenario(nnx: Any) -> Any:
        inner = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
        if attribute == "static":
            inner.scale = 1
        object.__setattr__(inner, "scale", jnp.ones(2))
        holder = {
            "nothing": lambda: inner,
            "a Sequential": lambda: nnx.Sequential(inner),
            "two Sequentials": lambda: nnx.Sequential(nnx.Sequential(inner)),
            "a List": lambda: nnx.List([inner]),
        }[held_by]()
        return nnx.check_pytree(holder)

    outcome = assert_same(
        flax_nnx, nnx, scenario, mentions=("'scale'", "class Linear(Module):") if held_by == "nothing" else ()
    )
    assert (outcome.error is None) == (held_by != "nothing"), f"flax's check_pytree with the Module held by {held_by}"


CONTAINERS: dict[str, Any] = {
    "a list": lambda nnx: [],
    "a dict": lambda nnx: {},
    "a list in a tuple": lambda nnx: ([],),
    "nnx.static of a list": lambda nnx: nnx.static([]),
    "nnx.data of a list": lambda nnx: nnx.data([]),
    "an nnx.List": lambda nnx: nnx.List([]),
    "an nnx.Dict": lambda nnx: nnx.Dict(),
}
PUTS: dict[str, Any] = {  # (on a list, on a dict)
    "one item": (lambda c, v: c.append(v), lambda c, v: c.__setitem__("k", v)),
    "a batch": (lambda c, v: c.extend([v, v]), lambda c, v: c.update(k=v, j=v)),
    "in front": (lambda c, v: c.insert(0, v), lambda c, v: c.setdefault("a", v)),
}
VALUES: dict[str, Any] = {
    "a jax array": lambda nnx: jnp.array(1),
    "a numpy array": lambda nnx: np.ones(2),
    "a Param": lambda nnx: nnx.Param(jnp.ones(1)),
    "a Linear": lambda nnx: nnx.Linear(1, 1, rngs=nnx.Rngs(0)),
    "a list holding an array": lambda nnx: [jnp.ones(1)],
    "an int": lambda nnx: 1,
    "a string": lambda nnx: "s",
}
BASES = {"Module": "Module", "Pytree": "Pytree", "Module(pytree=False)": "Module", "Object": "Object"}


def _put(put: str, container: Any, value: Any) -> None:
    target = container[0] if isinstance(container, tuple) else container
    on_list, on_dict = PUTS[put]
    (on_dict if hasattr(target, "keys") else on_list)(target, value)


@pytest.mark.apis("Pytree", "Module", "Object", "static", "data", "List", "Dict", "check_pytree")
@pytest.mark.documented(OBJECT_PAGE)
@given(
    container=st.sampled_from(sorted(CONTAINERS)),
    put=st.sampled_from(sorted(PUTS)),
    value=st.sampled_from(sorted(VALUES)),
    base=st.sampled_from(sorted(BASES)),
    bypass=st.booleans(),
    after_init=st.booleans(),
)
def test_data_put_into_a_static_attribute_s_container_is_refused_after_init_as_flax(
    nnx: Any, flax_nnx: Any, container: str, put: str, value: str, base: str, bypass: bool, after_init: bool
) -> None:
    """``self.ls = []`` then ``self.ls.append(array)`` in ``__init__`` (or after it, or with
    the attribute set by ``object.__setattr__``): flax's ValueError naming the attribute when
    ``__init__`` returns with data in a static attribute; accepted where the attribute is data
    or the class is no pytree. The object's state, leaves and check_pytree's verdict as flax's."""
    assume(not (bypass and container.startswith("nnx.")))  # nnx.static/nnx.data mark a __setattr__

    def scenario(nnx: Any) -> Any:
        keywords = {"pytree": False} if base.endswith("(pytree=False)") else {}

        class Holder(getattr(nnx, BASES[base]), **keywords):  # type: ignore[misc]
            def __init__(self) -> None:
                made = CONTAINERS[container](nnx)
                if bypass:
                    object.__setattr__(self, "ls", made)
                else:
                    self.ls = made
                if not after_init:
                    _put(put, self.ls, VALUES[value](nnx))

        holder = Holder()
        if after_init:
            _put(put, holder.ls, VALUES[value](nnx))
        leaves = jax.tree.leaves(holder)
        checked = _outcome(lambda: nnx.check_pytree(holder))
        return holder, leaves, checked, _outcome(lambda: nnx.state(holder))

    assert_same(flax_nnx, nnx, scenario, mentions=["static attribute"])


def _outcome(call: Any) -> Any:
    """What ``call`` returned, or the name of the exception it raised."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - the exception's type is the outcome
        return type(error).__name__


@pytest.mark.apis("register_data_type", "is_data", "Pytree")
@pytest.mark.documented("api object page: register_data_type, is_data (a registered type is data)")
@given(registered=st.sampled_from(["the class", "its base"]), holder=st.sampled_from(["Module", "Pytree"]))
def test_a_registered_data_type_is_data_by_its_exact_type_as_flax(
    nnx: Any, flax_nnx: Any, registered: str, holder: str
) -> None:
    """``register_data_type`` of a class makes its instances data (is_data, Pytree leaves,
    state); an instance of a subclass of a registered class is not, as flax matches the exact type."""

    def scenario(nnx: Any) -> Any:
        class Base:
            pass

        class Sub(Base):
            pass

        nnx.register_data_type(Sub if registered == "the class" else Base)

        class Holder(getattr(nnx, holder)):  # type: ignore[misc]
            def __init__(self) -> None:
                self.sub = Sub()

        made = Holder()
        return nnx.is_data(Sub()), [type(leaf).__name__ for leaf in jax.tree.leaves(made)], list(nnx.state(made))

    assert_same(flax_nnx, nnx, scenario)
