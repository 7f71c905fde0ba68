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
import optax
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
def test_a_graphdef_of_a_module_holding_a_raw_ref_hashes_and_jits_as_flax_s(
    nnx: Any, flax_nnx: Any, graph: bool
) -> None:
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
def test_a_copied_graphdef_equals_and_hashes_as_the_original_as_flax_s(
    nnx: Any, flax_nnx: Any, how: str, graph: bool
) -> None:
    """A GraphDef of a Module with Variables, an array data attribute and a static one, copied:
    equal to the original, of the same hash, and it merges back."""

    def scenario(nnx: Any) -> Any:
        module = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        module.raw = nnx.data(jnp.ones(2))
        original = nnx.graphdef(module, graph=graph)
        copied = COPIES[how](original)
        return copied == original, hash(copied) == hash(original), nnx.merge(copied, nnx.state(module))

    assert_same(flax_nnx, nnx, scenario)


def _rngs(nnx: Any) -> Any:
    return nnx.Rngs(0)


def _subclass(base: type) -> Any:
    """An instance of a subclass of ``base`` (flax's base classes are made through one) holding
    a Variable and a static value."""

    class Sub(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self.count = jnp.zeros(())
            self.name = "sub"

    return Sub()


PUBLIC_PYTREES: dict[str, Callable[[Any], Any]] = {
    "Accuracy": lambda nnx: nnx.metrics.Accuracy(),
    "Average": lambda nnx: nnx.metrics.Average("loss"),
    "BatchNorm": lambda nnx: nnx.BatchNorm(3, rngs=_rngs(nnx)),
    "Bidirectional": lambda nnx: nnx.Bidirectional(
        nnx.RNN(nnx.SimpleCell(2, 3, rngs=_rngs(nnx))), nnx.RNN(nnx.SimpleCell(2, 3, rngs=_rngs(nnx)))
    ),
    "Conv": lambda nnx: nnx.Conv(2, 3, (3,), rngs=_rngs(nnx)),
    "ConvTranspose": lambda nnx: nnx.ConvTranspose(2, 3, (3,), rngs=_rngs(nnx)),
    "Dict": lambda nnx: nnx.Dict(a=nnx.Param(jnp.ones(1)), b=3),
    "Dropout": lambda nnx: nnx.Dropout(0.5, rngs=_rngs(nnx)),
    "EMA": lambda nnx: nnx.EMA(nnx.Linear(2, 3, rngs=_rngs(nnx)), decay=0.9),
    "Einsum": lambda nnx: nnx.Einsum("ab,bc->ac", (2, 3), (3,), rngs=_rngs(nnx)),
    "Embed": lambda nnx: nnx.Embed(4, 3, rngs=_rngs(nnx)),
    "GRUCell": lambda nnx: nnx.GRUCell(2, 3, rngs=_rngs(nnx)),
    "GroupNorm": lambda nnx: nnx.GroupNorm(4, num_groups=2, rngs=_rngs(nnx)),
    "InstanceNorm": lambda nnx: nnx.InstanceNorm(3, rngs=_rngs(nnx)),
    "LSTMCell": lambda nnx: nnx.LSTMCell(2, 3, rngs=_rngs(nnx)),
    "LayerNorm": lambda nnx: nnx.LayerNorm(3, rngs=_rngs(nnx)),
    "Linear": lambda nnx: nnx.Linear(2, 3, rngs=_rngs(nnx)),
    "LinearGeneral": lambda nnx: nnx.LinearGeneral((2, 3), 4, axis=(-2, -1), rngs=_rngs(nnx)),
    "List": lambda nnx: nnx.List([nnx.Param(jnp.ones(1)), 3]),
    "LoRA": lambda nnx: nnx.LoRA(2, 1, 3, rngs=_rngs(nnx)),
    "LoRALinear": lambda nnx: nnx.LoRALinear(2, 3, lora_rank=1, rngs=_rngs(nnx)),
    "Metric": lambda nnx: _subclass(nnx.Metric),
    "ModelAndOptimizer": lambda nnx: nnx.ModelAndOptimizer(nnx.Linear(2, 3, rngs=_rngs(nnx)), optax.sgd(0.1)),
    "Module": lambda nnx: nnx.Module(),
    "MultiHeadAttention": lambda nnx: nnx.MultiHeadAttention(2, 4, decode=False, rngs=_rngs(nnx)),
    "MultiMetric": lambda nnx: nnx.MultiMetric(
        loss=nnx.metrics.Average("loss"), accuracy=nnx.metrics.Average("accuracy")
    ),
    "Object": lambda nnx: nnx.Object(),
    "OptimizedLSTMCell": lambda nnx: nnx.OptimizedLSTMCell(2, 3, rngs=_rngs(nnx)),
    "Optimizer": lambda nnx: nnx.Optimizer(nnx.Linear(2, 3, rngs=_rngs(nnx)), optax.adam(0.1), wrt=nnx.Param),
    "PReLU": lambda nnx: nnx.PReLU(),
    "Pytree": lambda nnx: _subclass(nnx.Pytree),
    "RMSNorm": lambda nnx: nnx.RMSNorm(3, rngs=_rngs(nnx)),
    "RNN": lambda nnx: nnx.RNN(nnx.LSTMCell(2, 3, rngs=_rngs(nnx))),
    "RNNCellBase": lambda nnx: nnx.SimpleCell(2, 3, rngs=_rngs(nnx)),  # abstract: a subclass stands for it
    "RngStream": lambda nnx: nnx.RngStream(0, tag="default"),
    "Rngs": lambda nnx: nnx.Rngs(0, dropout=1),
    "RoPE": lambda nnx: nnx.RoPE(),
    "Sequential": lambda nnx: nnx.Sequential(nnx.Linear(2, 3, rngs=_rngs(nnx)), nnx.relu),
    "SimpleCell": lambda nnx: nnx.SimpleCell(2, 3, rngs=_rngs(nnx)),
    "SpectralNorm": lambda nnx: nnx.SpectralNorm(nnx.Linear(2, 3, rngs=_rngs(nnx)), rngs=_rngs(nnx)),
    "Welford": lambda nnx: nnx.metrics.Welford("loss"),
    "WeightNorm": lambda nnx: nnx.WeightNorm(nnx.Linear(2, 3, rngs=_rngs(nnx)), rngs=_rngs(nnx)),
}


def _public_pytree_types(nnx: Any) -> set[str]:
    """The names of the Pytree subclasses ``nnx`` and ``nnx.metrics`` export."""
    return {
        name
        for module in (nnx, nnx.metrics)
        for name in dir(module)
        if isinstance(getattr(module, name), type) and issubclass(getattr(module, name), nnx.Pytree)
    }


@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(None)
def test_every_public_module_type_of_flax_has_a_graphdef_case(flax_nnx: Any) -> None:
    """The cases below cover flax's every public Pytree type, so a type flax adds is seen."""
    with flax_nnx.active() as flax:
        missing = _public_pytree_types(flax) - set(PUBLIC_PYTREES)
    assert not missing, f"public Pytree types of flax.nnx without a case below: {sorted(missing)}"


@pytest.mark.apis("graphdef", "GraphDef", "split", "merge")
@pytest.mark.documented(None)
@pytest.mark.parametrize(
    ("kind", "graph"),
    [
        pytest.param(kind, graph, id=f"{kind}-{'graph' if graph else 'tree'} mode")
        for kind in sorted(PUBLIC_PYTREES)
        for graph in (True, False)
        if graph or kind != "Object"  # tree mode refuses an Object, which is no pytree
    ],
)
def test_the_graphdef_of_every_public_module_type_hashes_and_equals_across_splits_as_flax_s(
    nnx: Any, flax_nnx: Any, kind: str, graph: bool
) -> None:
    """Two splits of one object give equal GraphDefs of equal hashes (a GraphDef is what
    ``jax.jit`` takes as a static argument), and a jitted merge runs, as flax's."""

    def scenario(nnx: Any) -> Any:
        node = PUBLIC_PYTREES[kind](nnx)
        (first, state), second = nnx.split(node, graph=graph), nnx.graphdef(node, graph=graph)
        rebuilt = jax.jit(lambda g, s: nnx.state(nnx.merge(g, s)), static_argnums=0)(first, state)
        return first == second, hash(first) == hash(second), rebuilt

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax hashes the GraphDef of a {kind}: {outcome.error!r}"
