"""Differential tests of what ``nnx.tabulate`` writes of a Module's own Variables (their
metadata beside the value, values that are not arrays), of inputs that are graph objects,
and of objects it cannot tabulate: flax's table, or flax's error, in each case."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same, assert_same_text

pytestmark = [pytest.mark.kind("differential"), pytest.mark.graph_mode("graph")]

X = jnp.ones((1, 2))


def _with_metadata(nnx: Any) -> Any:
    """A Module whose Params carry metadata of their own, one of them a tuple with None."""

    class Tagged(nnx.Module):
        def __init__(self) -> None:
            self.kernel = nnx.Param(jnp.ones((2, 2)), note="frozen", axes=("rows", None))
            self.bias = nnx.Param(jnp.zeros(2))
            self.scale = nnx.Param(jnp.ones(2), count=3)

        def __call__(self, x: Any) -> Any:
            return x @ self.kernel + self.bias

    return Tagged()


def _scalar_variables(nnx: Any) -> Any:
    """A Module holding Variables whose values are Python values, not arrays, with and without metadata."""

    class Counter(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))
            self.steps = nnx.Variable(3)
            self.flag = nnx.Variable(True, note="static")

        def __call__(self, x: Any) -> Any:
            return x * self.w

    return Counter()


def _graph_object_argument(nnx: Any) -> Any:
    """A Module called with an object of a Module class that is no pytree (``pytree=False``),
    by the table's caller and by the Module for its submodule."""

    class Holder(nnx.Module, pytree=False):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))

    class Scale(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))

        def __call__(self, x: Any, holder: Any) -> Any:
            return x * self.w

    class Outer(nnx.Module):
        def __init__(self) -> None:
            self.scale = Scale()

        def __call__(self, x: Any, holder: Any) -> Any:
            return self.scale(x, holder)

    return Outer(), Holder()


CASES: dict[str, Callable[[Any], Any]] = {
    "Params with metadata": lambda nnx: (_with_metadata(nnx),),
    "Variables of Python values": lambda nnx: (_scalar_variables(nnx),),
    "a Module that is no pytree given as an argument": _graph_object_argument,
}
"""The tabulated Module, then the arguments after ``X`` its call is given."""


@pytest.mark.apis("tabulate", "Variable", "Param")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(CASES))
def test_tabulate_writes_a_module_s_variables_and_graph_inputs_as_flax_does(nnx: Any, flax_nnx: Any, case: str) -> None:
    def tabulate(nnx: Any) -> str:
        model, *args = CASES[case](nnx)
        return nnx.tabulate(model, X, *args, console_kwargs={"width": 200})

    assert_same_text(flax_nnx, nnx, tabulate, f"the table of {case}", may_raise=False)


NOT_GRAPH_NODES: dict[str, Callable[[Any], Any]] = {
    "an array": lambda nnx: jnp.ones(3),
    "a number": lambda nnx: 3,
    "a function": lambda nnx: lambda x: x,
}


@pytest.mark.apis("tabulate")
@pytest.mark.documented("tabulate's docstring: obj can be a pytree or a graph object")
@pytest.mark.parametrize("obj", sorted(NOT_GRAPH_NODES))
def test_tabulate_refuses_an_object_that_is_no_graph_node_as_flax_does(nnx: Any, flax_nnx: Any, obj: str) -> None:
    assert_same(
        flax_nnx, nnx, lambda nnx: nnx.tabulate(NOT_GRAPH_NODES[obj](nnx), X), mentions=("Expected a graph node",)
    )
