"""Differential tests of which calls ``nnx.tabulate`` records: a call on an object makes a
row unless one of that object's calls with the same inputs returned before it (whatever
the method), and rows keep the order in which the calls started; in graph mode the inputs
that are Python or NumPy scalars reach the model as given (a Python branch may test them)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same_text

pytestmark = pytest.mark.kind("differential")


class SubCall(NamedTuple):
    """One call the model makes on its submodule: ``sub.<method>(ones(shape, dtype), n)``."""

    method: str
    shape: tuple[int, ...]
    dtype: str
    n: int
    n_by_keyword: bool


class Program(NamedTuple):
    """What the tabulated model's ``__call__`` does: its submodule calls in order, then
    optionally a ``sow`` and a call of its own ``helper`` with the inputs it was given."""

    calls: list[SubCall]
    sows: bool
    calls_helper: bool


sub_calls = st.builds(
    SubCall,
    method=st.sampled_from(["__call__", "other"]),
    shape=st.sampled_from([(1, 2), (3, 2)]),
    dtype=st.sampled_from(["float32", "int32"]),
    n=st.sampled_from([1, 2]),
    n_by_keyword=st.booleans(),
)
programs = st.builds(
    Program, calls=st.lists(sub_calls, min_size=1, max_size=5), sows=st.booleans(), calls_helper=st.booleans()
)


def _model(nnx: Any, program: Program) -> Any:
    """A model whose ``__call__`` runs ``program``."""

    class Sub(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))

        def __call__(self, x: Any, n: int = 1) -> Any:
            return x * n

        def other(self, x: Any, n: int = 1) -> Any:
            return x + n

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.sub = Sub()

        def __call__(self, x: Any) -> Any:
            for call in program.calls:
                method, y = getattr(self.sub, call.method), jnp.ones(call.shape, call.dtype)
                method(y, n=call.n) if call.n_by_keyword else method(y, call.n)
            if program.sows:
                self.sow(nnx.Intermediate, "seen", x)
            return self.helper(x) if program.calls_helper else x

        def helper(self, x: Any) -> Any:
            return x * 2

    return Model()


# flax 0.12.12's tabulate raises in tree mode on some of these models and, when it does, leaves a
# hook on RngStream that breaks every later Rngs call of its process: the tables are compared in graph mode
@pytest.mark.graph_mode("graph")
@pytest.mark.apis("tabulate")
@given(program=programs)
def test_tabulate_records_the_calls_flax_records(nnx: Any, flax_nnx: Any, program: Program) -> None:
    def tabulate(n: Any) -> str:
        return n.tabulate(_model(n, program), jnp.ones((1, 2)), console_kwargs={"width": 200})

    assert_same_text(flax_nnx, nnx, tabulate, f"the table of {program}")


@pytest.mark.graph_mode("graph")
@pytest.mark.apis("tabulate")
@given(
    flag=st.sampled_from([True, False, np.bool_(True)]),
    n=st.sampled_from([2, 2.5, np.float32(2.0), np.int32(3)]),
    n_by_keyword=st.booleans(),
)
def test_tabulate_passes_scalar_inputs_as_given_in_graph_mode_as_flax(
    nnx: Any, flax_nnx: Any, flag: Any, n: Any, n_by_keyword: bool
) -> None:
    def tabulate(nnx: Any) -> str:
        class Gated(nnx.Module):
            def __init__(self) -> None:
                self.linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

            def __call__(self, x: Any, flag: Any, n: Any = 1) -> Any:
                return self.linear(x) * n if flag else x

        inputs = ((jnp.ones((1, 2)), flag), {"n": n}) if n_by_keyword else ((jnp.ones((1, 2)), flag, n), {})
        return nnx.tabulate(Gated(), *inputs[0], **inputs[1], console_kwargs={"width": 200})

    assert_same_text(flax_nnx, nnx, tabulate, f"the table of {(flag, n)}")
