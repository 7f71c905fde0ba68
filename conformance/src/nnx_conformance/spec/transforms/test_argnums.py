"""Differential tests of ``argnums`` past the arguments a caller passes: ``grad`` and
``value_and_grad`` refuse them with flax's TypeError in every mode, also for a function
that takes ``*args``."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.documented(None)
@given(
    argnums=st.sampled_from([0, 1, 2, (0, 1), (1, 2), (0,)]),
    passed=st.integers(1, 2),
    transform=st.sampled_from(["grad", "value_and_grad"]),
    mode=st.sampled_from([(True, True), (True, False), (False, False)]),
)
def test_argnums_past_the_passed_arguments_are_refused_as_by_flax(
    nnx: Any, flax_nnx: Any, argnums: Any, passed: int, transform: str, mode: tuple[bool, bool]
) -> None:
    graph, graph_updates = mode

    def scenario(nnx: Any) -> Any:
        def loss(x: Any, *rest: Any) -> Any:
            return (x**2).sum() + sum((r**2).sum() for r in rest)

        arguments = [jnp.arange(2.0) + i for i in range(passed)]
        return getattr(nnx, transform)(loss, argnums=argnums, graph=graph, graph_updates=graph_updates)(*arguments)

    assert_same(flax_nnx, nnx, scenario, mentions=("argnums",) if max(
        (argnums,) if isinstance(argnums, int) else argnums) >= passed else ())
