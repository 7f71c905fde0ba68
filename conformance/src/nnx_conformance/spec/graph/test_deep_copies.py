"""Differential tests of ``copy.deepcopy`` over NNX objects, beside flax.nnx.

flax 0.12.12 deep-copies a Pytree (a Module, an ``nnx.List``, ``Rngs``, an Optimizer) as a
graph: in graph mode whatever the global mode, so what it shares stays shared, its static
values deep-copied, each Variable a new one of its type with copies of its value and
metadata (a ref Variable a Ref of its own), and the copy's graph apart from the ``memo`` of
the surrounding deepcopy. A Variable on its own has no deep copy of its own: deepcopy
reads ``__deepcopy__`` through to the stored value, so a Variable holding an array (or a
State of them) deep-copies to that array, and one holding a value without ``__deepcopy__``
to a Variable. The docs are silent; this is the spec.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


def _hook(variable: Any, value: Any) -> Any:
    """An ``on_get_value`` hook (module level: the same function in both runs)."""
    return value * 2


def _model(nnx: Any) -> Any:
    class Model(nnx.Module):
        def __init__(self) -> None:
            self.config = [1, 2]
            self.p = nnx.Param(jnp.ones(2), tag=[1])
            self.alias = self.p
            self.h = nnx.Param(jnp.ones(1), hijax=True)
            self.r = nnx.Param(jnp.ones(1), ref=True)
            self.hooked = nnx.BatchStat(jnp.ones(1), on_get_value=_hook)
            self.items = nnx.data([nnx.Param(jnp.zeros(1)), {"a": nnx.Variable(3)}])
            self.np = np.ones(2)
            self.sub = nnx.Linear(1, 2, rngs=nnx.Rngs(0))
            self.same_sub = self.sub
            self.rngs = nnx.Rngs(1)

    return Model()


def _copy_of_a_model(nnx: Any, graph_mode: bool) -> Any:
    model = _model(nnx)
    nnx.set_graph_mode(graph_mode)
    try:
        copied = copy.deepcopy(model)
    finally:
        nnx.set_graph_mode(True)
    copied.p[...] = copied.p[...] + 1
    copied.r[...] = copied.r[...] + 1
    copied.rngs.default()
    facts = {
        "shared Param stays shared": copied.p is copied.alias,
        "shared submodule stays shared": copied.sub is copied.same_sub,
        "new Param": copied.p is not model.p,
        "new submodule": copied.sub is not model.sub,
        "static list copied": copied.config is not model.config and copied.config == model.config,
        "metadata copied": copied.p.tag is not model.p.tag,
        "ref of its own": copied.r.get_raw_value() is not model.r.get_raw_value(),
        "NumPy attribute copied": copied.np is not model.np,
    }
    return facts, copied, model


def _deep_copied(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        original = make(nnx)
        copied = copy.deepcopy(original)
        return type(copied).__name__, copied, original

    return scenario


COPIED: dict[str, Callable[[Any], Any]] = {
    "an nnx.List of Params": lambda nnx: nnx.List([nnx.Param(jnp.ones(1)), nnx.BatchStat(jnp.zeros(2))]),
    "an nnx.Dict of Params": lambda nnx: nnx.Dict(a=nnx.Param(jnp.ones(1))),
    "Rngs": lambda nnx: nnx.Rngs(0, params=1),
    "a Sequential": lambda nnx: nnx.Sequential(nnx.Linear(1, 1, rngs=nnx.Rngs(0))),
    "an Optimizer": lambda nnx: nnx.Optimizer(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), optax.adam(0.1), wrt=nnx.Param),
    "a plain Pytree": lambda nnx: _pytree(nnx, True),
    "a Pytree that is no JAX pytree": lambda nnx: _pytree(nnx, False),
    "a State of a Module": lambda nnx: nnx.state(nnx.Linear(1, 2, rngs=nnx.Rngs(0))),
    "a list of Variables": lambda nnx: [nnx.Param(jnp.ones(1)), nnx.Param(2)],
    "a GraphDef": lambda nnx: nnx.graphdef(nnx.Linear(1, 2, rngs=nnx.Rngs(0))),
}


def _pytree(nnx: Any, pytree: bool) -> Any:
    class Holder(nnx.Pytree, pytree=pytree):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(1))
            self.n = 3

    return Holder()


@pytest.mark.apis("Module", "Param", "Rngs", "set_graph_mode")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph_mode", [True, False], ids=["graph mode", "tree mode"])
def test_deepcopy_copies_a_module_s_whole_graph_as_flax(nnx: Any, flax_nnx: Any, graph_mode: bool) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda n: _copy_of_a_model(n, graph_mode))
    assert outcome.error is None, f"flax deep-copies the model: {outcome.error!r}"


@pytest.mark.apis(
    "Module", "Pytree", "List", "Dict", "Rngs", "Sequential", "Optimizer", "State", "Variable", "GraphDef"
)
@pytest.mark.documented(None)
@pytest.mark.parametrize("what", sorted(COPIED))
def test_deepcopy_of_nnx_objects_gives_what_flax_s_gives(nnx: Any, flax_nnx: Any, what: str) -> None:
    assert_same(flax_nnx, nnx, _deep_copied(COPIED[what]))


@pytest.mark.apis("Module")
@pytest.mark.documented(None)
def test_a_deepcopy_of_a_module_and_its_param_together_copies_the_param_twice_as_flax(nnx: Any, flax_nnx: Any) -> None:
    """The Module's graph is copied apart from deepcopy's memo: the Param copied beside it is
    another object, while the Module given twice is copied once."""

    def scenario(nnx: Any) -> Any:
        layer = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
        copied = copy.deepcopy([layer, layer, layer.kernel])
        return copied, copied[0] is copied[1], copied[0].kernel is copied[2]

    assert_same(flax_nnx, nnx, scenario)
