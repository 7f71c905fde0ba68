"""Differential tests of the pytree helpers: ``Object`` (an NNX object that is not a pytree),
``nnx.dataclass``, the ``Dict`` and ``List`` Modules and ``register_data_type`` leave flax's
state, leaves and results."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("module/pytree")]

KEYS = st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True)


@pytest.mark.apis("Object")
@given(size=st.integers(1, 4), static=st.integers(-2, 2), graph=st.sampled_from([None, True, False]), nested=st.booleans())
def test_an_object_is_a_graph_node_but_a_single_pytree_leaf_as_in_flax(
    nnx: Any, flax_nnx: Any, size: int, static: int, graph: bool | None, nested: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Holder(nnx.Object):
            def __init__(self) -> None:
                self.p = nnx.Param(jnp.arange(float(size)))
                self.n = static

        class Parent(nnx.Module):
            def __init__(self) -> None:
                self.holder = Holder()

        holder = Holder()
        leaves = jax.tree.leaves(holder)
        graphdef, state = nnx.split(Parent() if nested else holder, graph=graph)  # tree mode refuses an Object
        return [leaf is holder for leaf in leaves], state, nnx.merge(graphdef, state)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("dataclass")
@given(a=st.integers(-3, 3), order=st.booleans(), kw_only=st.booleans(), frozen_eq=st.booleans())
def test_an_nnx_dataclass_has_the_fields_leaves_and_comparisons_of_flax(
    nnx: Any, flax_nnx: Any, a: int, order: bool, kw_only: bool, frozen_eq: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.dataclass(order=order, kw_only=kw_only, eq=frozen_eq)
        class Point(nnx.Pytree):
            a: int
            p: nnx.Param = nnx.data()

        def make(value: int) -> Any:
            param = nnx.Param(jnp.full((2,), float(value)))
            return Point(a=value, p=param) if kw_only else Point(value, param)

        first, second = make(a), make(a + 1)
        compared = [first == first, first == second]
        if order:
            compared.append(first < second)
        return first, jax.tree.leaves(second), compared, nnx.state(second)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Dict")
@given(keys=KEYS, removed=st.integers(0, 3), static=st.booleans())
def test_a_dict_module_keeps_its_items_in_its_state_as_flax(
    nnx: Any, flax_nnx: Any, keys: list[str], removed: int, static: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        items = {key: nnx.Param(jnp.full((1,), float(i))) for i, key in enumerate(keys)}
        if static:
            items["static"] = len(keys)
        module = nnx.Dict(items)
        del module[keys[removed % len(keys)]]
        module["added"] = nnx.BatchStat(jnp.zeros(2))
        return sorted(module.keys()), len(module), nnx.state(module), "added" in module, repr(module)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("register_data_type")
@given(size=st.integers(1, 3), as_decorator=st.booleans())
def test_a_registered_data_type_is_state_of_a_module_as_in_flax(nnx: Any, flax_nnx: Any, size: int, as_decorator: bool) -> None:
    def scenario(nnx: Any) -> Any:
        class Box:
            def __init__(self, value: Any) -> None:
                self.value = value

        registered = nnx.register_data_type(Box) if as_decorator else Box
        if not as_decorator:
            nnx.register_data_type(Box)

        class Model(nnx.Module):
            def __init__(self) -> None:
                self.box = Box(jnp.ones(size))
                self.plain = size

        model = Model()
        state = nnx.state(model)
        return registered is Box, sorted(str(path) for path, _ in nnx.to_flat_state(state)), [
            type(leaf).__name__ for _, leaf in nnx.to_flat_state(state)]

    assert_same(flax_nnx, nnx, scenario)


LIST_ITEMS = {"ints": [2, 3, 4], "Params": ["P", "P", "P"], "a Param among ints": ["P", 2, 3]}
"""The items a List starts with, by kind ("P": a new Param)."""

LIST_OPERATIONS = {
    "append a Param": lambda n, x: x.append(n.Param(jnp.ones(1))),
    "append an int": lambda n, x: x.append(7),
    "insert an int first": lambda n, x: x.insert(0, 7),
    "insert a Param first": lambda n, x: x.insert(0, n.Param(jnp.ones(1))),
    "insert an int before the last": lambda n, x: x.insert(-1, 7),
    "set the second to a Param": lambda n, x: x.__setitem__(1, n.Param(jnp.ones(1))),
    "set the first to an int": lambda n, x: x.__setitem__(0, 7),
    "set a slice to as many ints": lambda n, x: x.__setitem__(slice(1, 3), [8, 9]),
    "set a slice to fewer values": lambda n, x: x.__setitem__(slice(0, 2), [8]),
    "pop the last": lambda n, x: x.pop(),
    "extend": lambda n, x: x.extend([5, n.Param(jnp.ones(1))]),
    "reverse": lambda n, x: x.reverse(),
    "clear": lambda n, x: x.clear(),
}
"""Operations whose outcome does not depend on how a delete leaves the places it empties
(flax 0.12.12 keeps each place's kind there and a stale last place; see reference/README.md)."""


@pytest.mark.apis("List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("operation", LIST_OPERATIONS)
@pytest.mark.parametrize("items", LIST_ITEMS)
def test_a_list_operation_leaves_flax_s_items_and_state(nnx: Any, flax_nnx: Any, items: str, operation: str) -> None:
    """Each place keeps its kind: data set into a place that holds a static value is
    flax's ValueError, and a slice is set to as many values as it has places."""

    def scenario(nnx: Any) -> Any:
        made = nnx.List([nnx.Param(jnp.ones(1)) if item == "P" else item for item in LIST_ITEMS[items]])
        LIST_OPERATIONS[operation](nnx, made)
        return list(made), len(made), nnx.state(made)

    assert_same(flax_nnx, nnx, scenario)
