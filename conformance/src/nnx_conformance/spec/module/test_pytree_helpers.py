"""Differential tests of the pytree helpers: ``Object`` (an NNX object that is not a pytree),
``nnx.dataclass``, the ``Dict`` Module and ``register_data_type`` leave flax's state, leaves
and results."""

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
