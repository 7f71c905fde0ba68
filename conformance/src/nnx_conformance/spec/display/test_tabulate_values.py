"""Differential tests of how ``nnx.tabulate`` writes the inputs and outputs of a call: drawn
nested values (mappings keyed by names or by integers, lists, tuples, ``None``, empty
containers, arrays and Python scalars), given positionally, by keyword, or returned, make
flax's table character for character."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same_text

pytestmark = pytest.mark.kind("differential")

_leaves = st.one_of(
    st.none(),
    st.sampled_from([(2,), (1, 3)]).map(jnp.ones),
    st.sampled_from([0, 3, 1.5, True]),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from("abcz"), children, max_size=3),
        st.dictionaries(st.integers(0, 3), children, min_size=1, max_size=3),
    )


values = st.recursive(_leaves, _containers, max_leaves=8)
"""A nested value whose containers may hold no array or scalar at all."""


class Call(NamedTuple):
    """The tabulated call: ``model(*args, **kwargs)`` returning ``output``."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any


calls = st.builds(
    Call,
    args=st.lists(values, max_size=2).map(tuple),
    kwargs=st.dictionaries(st.sampled_from(["k", "j"]), values, max_size=2),
    output=values,
)


def _tabulate(call: Call) -> Any:
    def tabulate(nnx: Any) -> str:
        class Echo(nnx.Module):
            def __init__(self) -> None:
                self.w = nnx.Param(jnp.ones(1))

            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                return call.output

        return nnx.tabulate(Echo(), *call.args, **call.kwargs, console_kwargs={"width": 200})

    return tabulate


# flax 0.12.12's tabulate raises in tree mode on some models and then leaves a hook on
# RngStream that breaks later Rngs calls of its process: the tables are compared in graph mode
@pytest.mark.graph_mode("graph")
@pytest.mark.apis("tabulate")
@given(call=calls)
@example(call=Call(args=(jnp.ones(2), {"a": None}, None), kwargs={}, output=[jnp.ones(1), {}, {"b": None}, None]))
@example(call=Call(args=([[None, [jnp.ones(2)]]],), kwargs={"k": [[[], 1], [{}, 2]]}, output=[[[], 1], [{}, 2]]))
@example(call=Call(args=({1: {1: jnp.ones(2)}},), kwargs={}, output={2: 1.5, 0: {1: [None, 3]}}))
def test_tabulate_writes_drawn_inputs_and_outputs_as_flax_does(nnx: Any, flax_nnx: Any, call: Call) -> None:
    assert_same_text(flax_nnx, nnx, _tabulate(call), f"the table of {call}")
