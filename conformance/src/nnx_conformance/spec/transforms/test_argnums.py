"""Differential tests of the positions transforms are told about: ``argnums`` past the
arguments a caller passes, which ``grad`` and ``value_and_grad`` refuse with flax's TypeError
in every mode (also for a function that takes ``*args``), and ``jit``'s static arguments
changing between calls on the same model."""

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


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's static_argnums")
@given(scales=st.lists(st.integers(1, 3), min_size=2, max_size=4), graph=st.booleans())
def test_a_jitted_call_with_other_static_arguments_on_the_same_model_computes_afresh_as_flax(
    nnx: Any, flax_nnx: Any, scales: list[int], graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        scaled = nnx.jit(lambda model, scale: model(jnp.ones(2)) * scale, static_argnums=1, graph=graph)
        return [scaled(model, scale) for scale in scales]

    assert_same(flax_nnx, nnx, scenario)
