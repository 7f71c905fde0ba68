"""Parity of ``nnx.tracers.TraceState`` with flax.nnx: a record of the JAX trace active when
it was made, valid in that trace only, equal to another made in the same trace (and its
``jax_trace`` to that one's), a pytree without leaves."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


@pytest.mark.apis("tracers")
@pytest.mark.documented(None)
@given(made=st.sampled_from(["outside", "inside"]), transform=st.sampled_from(["jit", "grad", "vmap"]))
def test_a_trace_state_is_valid_in_the_trace_it_was_made_in_as_in_flax(
    nnx: Any, flax_nnx: Any, made: str, transform: str
) -> None:
    def scenario(nnx: Any) -> Any:
        trace_state = nnx.tracers.TraceState
        outer = trace_state()
        seen: list[Any] = []

        def body(x: Any) -> Any:
            inner = trace_state()
            state = outer if made == "outside" else inner
            seen.extend([state.is_valid(), inner == trace_state(), inner == outer, jax.tree.leaves(state)])
            seen.extend([inner.jax_trace == trace_state().jax_trace, inner.jax_trace == outer.jax_trace])
            return x.sum()

        getattr(jax, transform)(body)(jnp.ones(2))
        return seen, outer.is_valid(), outer == trace_state(), outer.jax_trace == trace_state().jax_trace

    assert_same(flax_nnx, nnx, scenario)
