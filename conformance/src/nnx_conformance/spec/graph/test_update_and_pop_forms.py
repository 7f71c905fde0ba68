"""Differential tests of the forms ``update`` and ``pop`` take beyond a Module and its State:
a Variable updated on its own (from an array, a Variable, an empty State, several states), a
Ref updated in place, containers (tuples, lists, dicts) as the node, and the errors flax
raises where the state does not fit the node; pop from a container, of an array, of a
Variable held twice, and from a value that is no node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


def _holder(nnx: Any, **attributes: Any) -> Any:
    """A bare Module holding ``attributes``."""
    module = nnx.Module()
    for name, value in attributes.items():
        setattr(module, name, value)
    return module


def _variable_updated(nnx: Any, *states: Callable[[Any], Any]) -> Any:
    """A Param updated on its own from the given states (each built with ``nnx``)."""
    variable = nnx.Param(jnp.ones(2))
    nnx.update(variable, *(make(nnx) for make in states))
    return variable


def _ref_variable_updated(nnx: Any) -> Any:
    """A ``ref=True`` Param updated from a State of a plain array: its Ref is written in place."""
    module = _holder(nnx, p=nnx.Param(jnp.ones(2), ref=True))
    ref = module.p.get_raw_value()
    nnx.update(module, nnx.State({"p": jnp.full(2, 7.0)}))
    return module.p.get_raw_value() is ref, module.p[...]


def _raw_ref_updated(nnx: Any) -> Any:
    """A Module attribute holding a bare Ref, updated from an array: the Ref is written in place."""
    ref = jax.new_ref(jnp.ones(2))
    module = _holder(nnx, r=nnx.data(ref))
    nnx.update(module, nnx.State({"r": jnp.full(2, 3.0)}))
    return module.r is ref, ref[...]


def _updated(node: Any, state: dict[Any, Any]) -> Callable[[Any], Any]:
    """A scenario updating what ``node(nnx)`` builds from ``State(state)``, giving back the node."""

    def scenario(nnx: Any) -> Any:
        made = node(nnx)
        nnx.update(made, nnx.State(state(nnx) if callable(state) else state))
        return made

    return scenario


UPDATES: dict[str, Callable[[Any], Any]] = {
    "a Variable from an array": lambda nnx: _variable_updated(nnx, lambda n: jnp.full(2, 5.0)),
    "a Variable from another Variable": lambda nnx: _variable_updated(nnx, lambda n: n.Param(jnp.full(2, 4.0), tag=1)),
    "a Variable from an empty State": lambda nnx: _variable_updated(nnx, lambda n: n.State({})),
    "a Variable from an empty State and a Variable": lambda nnx: _variable_updated(
        nnx, lambda n: n.State({}), lambda n: n.Param(jnp.full(2, 2.0))
    ),
    "a ref Variable from an array": _ref_variable_updated,
    "a bare Ref from an array": _raw_ref_updated,
    "a dict given a new key": _updated(lambda n: {"a": n.Param(jnp.ones(1))}, lambda n: {"b": n.Param(jnp.zeros(1))}),
    "a list given a new value for its static item": _updated(lambda n: [n.Param(jnp.ones(1)), 3], {1: 7}),
}


@pytest.mark.apis("update", "Variable", "State")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(UPDATES))
def test_update_of_these_forms_leaves_the_node_as_flax_does(nnx: Any, flax_nnx: Any, case: str) -> None:
    outcome = assert_same(flax_nnx, nnx, UPDATES[case], what=f"update of {case}")
    assert outcome.error is None, f"flax updates {case}: {outcome.error!r}"


UPDATE_ERRORS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "a Variable from two non-empty states": (
        lambda nnx: _variable_updated(nnx, lambda n: n.Param(jnp.zeros(2)), lambda n: n.Param(jnp.zeros(2))),
        "exactly one non-empty state",
    ),
    "a submodule from a Variable": (
        _updated(lambda n: _holder(n, child=n.Linear(1, 1, rngs=n.Rngs(0))), lambda n: {"child": n.Param(jnp.ones(1))}),
        "child",
    ),
    "a tuple given a new key": (
        _updated(lambda n: (n.Param(jnp.ones(1)),), lambda n: {1: n.Param(jnp.zeros(1))}),
        "tuple",
    ),
    "a tuple given a new value for its static item": (
        _updated(lambda n: (n.Param(jnp.ones(1)), 3), {1: 5}),
        "tuple",
    ),
    "a value that is no graph node": (_updated(lambda n: 3, {"a": 1}), "int"),
}


@pytest.mark.kind("error")
@pytest.mark.apis("update")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(UPDATE_ERRORS))
def test_update_raises_flax_error_where_the_state_does_not_fit(nnx: Any, flax_nnx: Any, case: str) -> None:
    scenario, mention = UPDATE_ERRORS[case]
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mention,), what=f"update of {case}")
    assert outcome.error is not None, f"flax refuses the update of {case}"


def _shared_popped(nnx: Any) -> Any:
    """pop of a Param two attributes hold: flax pops it at its first path only."""
    param = nnx.Param(jnp.ones(1))
    module = _holder(nnx, a=param, b=param)
    popped = nnx.pop(module, nnx.Param)
    return popped, hasattr(module, "a"), hasattr(module, "b")


def _popped_from(node: Callable[[Any], Any], *filters: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        made = node(nnx)
        return nnx.pop(made, *(f(nnx) for f in filters)), made

    return scenario


POPS: dict[str, Callable[[Any], Any]] = {
    "a Variable two attributes hold": _shared_popped,
    "an array and a Variable of a dict, by Everything": _popped_from(
        lambda n: {"x": jnp.arange(2.0), "p": n.Param(jnp.ones(1))}, lambda n: ...
    ),
}


@pytest.mark.apis("pop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(POPS))
def test_pop_of_these_forms_gives_flax_state_and_leaves_the_node_as_flax(nnx: Any, flax_nnx: Any, case: str) -> None:
    assert_same(flax_nnx, nnx, POPS[case], what=f"pop of {case}")


POP_ERRORS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "a tuple": (_popped_from(lambda n: (n.Param(jnp.ones(1)),), lambda n: n.Param), "tuple"),
    "a list": (_popped_from(lambda n: [n.BatchStat(jnp.ones(1)), 2], lambda n: n.BatchStat), "list"),
    "an array, which is no node": (_popped_from(lambda n: jnp.ones(2), lambda n: n.Param), "Unsupported type"),
}


@pytest.mark.kind("error")
@pytest.mark.apis("pop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(POP_ERRORS))
def test_pop_raises_flax_error_where_the_node_cannot_give_up_a_variable(nnx: Any, flax_nnx: Any, case: str) -> None:
    scenario, mention = POP_ERRORS[case]
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mention,), what=f"pop from {case}")
    assert outcome.error is not None, f"flax refuses to pop from {case}"
