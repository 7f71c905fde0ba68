"""Differential test of GraphDef equality: static attributes are compared by value, so
Modules built apart with equal static values have equal GraphDefs, as flax's; unhashable
statics and a raw ``jax.Ref`` attribute hash (or refuse to) as flax's, and a copied
GraphDef equals its original."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


STATIC_VALUES = {
    "a float": lambda v: float(v) / 3,
    "a tuple": lambda v: (int(v), "x" * int(v)),
    "a string": lambda v: "name-" * int(v),
    "a frozenset": lambda v: frozenset({int(v)}),
}


OTHER_KINDS = {
    "a Param": lambda nnx: nnx.Param(jnp.ones(1)),
    "a submodule": lambda nnx: nnx.Linear(1, 1, rngs=nnx.Rngs(0)),
    "a submodule without state": lambda nnx: nnx.Module(),
    "an array": lambda nnx: jnp.ones(1),
    "None": lambda nnx: None,
}


@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("place", ["an attribute", "an item of a data list"])
@pytest.mark.parametrize("other", OTHER_KINDS)
def test_a_graphdef_with_a_static_value_differs_from_one_with_another_kind_there(
    nnx: Any, flax_nnx: Any, other: str, place: str, graph: bool
) -> None:
    """A place that holds a static value in one Module and a Variable, a submodule, an
    array or None in another makes their GraphDefs unequal, compared either way round: an
    attribute, or an item of a list attribute that holds an array (so data) in both."""

    def scenario(nnx: Any) -> Any:
        def made(value: Callable[[], Any]) -> Any:
            module = nnx.Module()
            if place == "an attribute":
                module.x = value()
            else:
                module.items = nnx.data([jnp.zeros(1), value()])
            return nnx.graphdef(module, graph=graph)

        static, another = made(lambda: "static"), made(lambda: OTHER_KINDS[other](nnx))
        return static == another, another == static, static == made(lambda: "static")

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax compares the GraphDefs: {outcome.error!r}"


@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(None)
@pytest.mark.parametrize("static", STATIC_VALUES)
def test_graphdefs_with_equal_static_values_built_apart_are_equal_as_flax_s(
    nnx: Any, flax_nnx: Any, static: str
) -> None:
    """A static attribute is compared by value: two Modules built apart with equal (not
    identical) static values have equal GraphDefs, of equal hashes; another value differs."""

    def scenario(nnx: Any) -> Any:
        def made(v: int) -> Any:
            module = nnx.Module()
            module.p = nnx.Param(jnp.ones(2))
            module.s = STATIC_VALUES[static](v)
            return module

        first, second, other = (nnx.graphdef(made(v)) for v in (4, 4, 5))
        return first == second, hash(first) == hash(second), first == other

    assert_same(flax_nnx, nnx, scenario)


UNHASHABLE_PLACES = {
    "a static attribute": lambda nnx, module: setattr(module, "s", [1, 2]),
    "Variable metadata": lambda nnx, module: setattr(module, "q", nnx.Param(jnp.ones(2), tags=[1, 2])),
}


@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("place", UNHASHABLE_PLACES)
def test_hashing_a_graphdef_that_holds_an_unhashable_value_is_as_flax_s(
    nnx: Any, flax_nnx: Any, place: str, graph: bool
) -> None:
    """A list held as a static attribute or as Variable metadata: flax's graph-mode
    GraphDef then has no hash (``TypeError``) but still compares equal; its tree-mode
    GraphDef, a JAX treedef, hashes."""

    def scenario(nnx: Any) -> Any:
        def made() -> Any:
            module = nnx.Module()
            module.p = nnx.Param(jnp.ones(2))
            UNHASHABLE_PLACES[place](nnx, module)
            return module

        first, second = (nnx.graphdef(made(), graph=graph) for _ in range(2))
        equal = first == second
        return equal, hash(first) == hash(second)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("graphdef", "GraphDef", "jit", "data")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_graphdef_of_a_module_holding_a_raw_ref_hashes_and_jits_as_flax_s(nnx: Any, flax_nnx: Any, graph: bool) -> None:
    """A ``jax.Ref`` held as a data attribute (not in a Variable): the GraphDefs of two
    splits are equal with equal hashes, and ``nnx.jit`` runs the Module twice."""

    def scenario(nnx: Any) -> Any:
        module = nnx.Module()
        module.r = nnx.data(jax.new_ref(jnp.ones(2)))
        module.p = nnx.Param(jnp.ones(2))
        first, second = nnx.graphdef(module, graph=graph), nnx.graphdef(module, graph=graph)
        step = nnx.jit(lambda m: m.p[...] + m.r[...], graph=graph)
        return first == second, hash(first) == hash(second), len({first, second}), step(module), step(module)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax hashes and jits the Module: {outcome.error!r}"


COPIES = {"copy.deepcopy": copy.deepcopy, "a pickle round trip": lambda g: pickle.loads(pickle.dumps(g))}


@pytest.mark.apis("graphdef", "GraphDef", "merge", "data")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("how", COPIES)
def test_a_copied_graphdef_equals_and_hashes_as_the_original_as_flax_s(nnx: Any, flax_nnx: Any, how: str, graph: bool) -> None:
    """A GraphDef of a Module with Variables, an array data attribute and a static one, copied:
    equal to the original, of the same hash, and it merges back."""

    def scenario(nnx: Any) -> Any:
        module = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        module.raw = nnx.data(jnp.ones(2))
        original = nnx.graphdef(module, graph=graph)
        copied = COPIES[how](original)
        return copied == original, hash(copied) == hash(original), nnx.merge(copied, nnx.state(module))

    assert_same(flax_nnx, nnx, scenario)
