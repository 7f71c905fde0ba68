"""Differential tests of the graph traversals on the forms the Module tests do not build:
recursive_map replacing items of containers (which a tuple cannot take), cycles in graph
mode, iter_children and iter_module_children given values that are no node,
as_pure over a bare Ref, and set_metadata beside a data array."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


def _incremented(nnx: Any) -> Callable[[Any, Any], Any]:
    """A recursive_map function giving each Param a new Param of its value plus one."""

    def f(path: Any, node: Any) -> Any:
        return nnx.Param(node[...] + 1) if isinstance(node, nnx.Param) else node

    return f


def _mapped(node: Callable[[Any], Any], graph: bool) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        made = node(nnx)
        return nnx.recursive_map(_incremented(nnx), made, graph=graph), made

    return scenario


def _cycle(nnx: Any) -> Any:
    """A Module that holds itself."""
    module = nnx.Module()
    module.p = nnx.Param(jnp.ones(1))
    module.me = module
    return module


def _shared_child(nnx: Any) -> Any:
    child = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
    module = nnx.Module()
    module.a, module.b = child, child
    return module


MAPS: dict[str, Callable[[Any], Any]] = {
    "a list of Params, in graph mode": _mapped(lambda n: [n.Param(jnp.ones(1)), n.Param(jnp.zeros(1))], True),
    "a dict of Params, in graph mode": _mapped(lambda n: {"a": n.Param(jnp.ones(1)), "b": 2}, True),
    "an nnx.List of Params and ints, in graph mode": _mapped(lambda n: n.List([n.Param(jnp.ones(1)), 3]), True),
    "a Module holding one Linear twice, in graph mode": _mapped(_shared_child, True),
    "a tuple of Params, in graph mode": _mapped(lambda n: (n.Param(jnp.ones(1)),), True),
    "a Module that holds itself, in graph mode": _mapped(_cycle, True),
}


@pytest.mark.apis("recursive_map", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(MAPS))
def test_recursive_map_over_these_forms_gives_flax_result_or_error(nnx: Any, flax_nnx: Any, case: str) -> None:
    """Where flax cannot put the new node back (a tuple) or meets a node again before it is
    done (a cycle), it raises a ValueError; the implementation raises it too."""
    assert_same(flax_nnx, nnx, MAPS[case], what=f"recursive_map over {case}")


def _children(function: str, node: Callable[[Any], Any], graph: bool) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        return list(getattr(nnx, function)(node(nnx), graph=graph))

    return scenario


WALKS: dict[str, Callable[[Any], Any]] = {
    **{
        f"{function} of an array, in {mode} mode": _children(function, lambda n: jnp.ones(2), mode == "graph")
        for function in ("iter_children", "iter_module_children")
        for mode in ("graph", "tree")
    },
    "as_pure of a dict holding a bare Ref and a Param": lambda nnx: nnx.as_pure(
        {"r": jax.new_ref(jnp.arange(2.0)), "p": nnx.Param(jnp.ones(1))}
    ),
}


@pytest.mark.apis("iter_children", "iter_module_children", "as_pure")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(WALKS))
def test_these_traversals_give_flax_result_or_error(nnx: Any, flax_nnx: Any, case: str) -> None:
    assert_same(flax_nnx, nnx, WALKS[case], what=case)


@pytest.mark.apis("set_metadata", "data")
@pytest.mark.documented(None)
def test_set_metadata_sets_the_variables_metadata_and_passes_over_a_data_array(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        module = nnx.Module()
        module.x = nnx.data(jnp.ones(2))
        module.p = nnx.Param(jnp.zeros(1))
        nnx.set_metadata(module, only=..., differentiable=False)  # the filter lets the array through
        return module

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax sets the metadata: {outcome.error!r}"
