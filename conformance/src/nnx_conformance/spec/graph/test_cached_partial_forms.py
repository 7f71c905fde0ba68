"""Differential tests of cached_partial beyond the Modules it binds: a call given a Module
it did not bind, a call returning a Module made inside it, and cached_partial asked for in
tree mode, which flax refuses."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


@pytest.mark.apis("cached_partial", "jit", "set_graph_mode", "set_graph_updates")
@pytest.mark.documented("api graph page: cached_partial (a partial of a transformed function, its bound nodes cached)")
def test_a_cached_call_updates_a_module_it_did_not_bind_and_returns_a_new_one_as_flax(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        bound, given = nnx.Linear(1, 1, rngs=nnx.Rngs(0)), nnx.Linear(1, 1, rngs=nnx.Rngs(1))

        def step(bound: Any, given: Any, x: Any) -> Any:
            given.kernel[...] += 1
            return nnx.Linear(1, 2, rngs=nnx.Rngs(2)), bound(x) + given(x)

        with nnx.set_graph_mode(True), nnx.set_graph_updates(True):  # what cached_partial needs
            cached = nnx.cached_partial(nnx.jit(step), bound)
            outputs = [cached(given, jnp.ones((1, 1))) for _ in range(2)]
        return outputs, bound, given

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax runs the cached call: {outcome.error!r}"


@pytest.mark.kind("error")
@pytest.mark.apis("cached_partial")
@pytest.mark.documented(None)
def test_cached_partial_in_tree_mode_raises_flax_error(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        return nnx.cached_partial(nnx.jit(lambda m: m), nnx.Linear(1, 1, rngs=nnx.Rngs(0)), graph=False)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("graph",))
    assert outcome.error is not None, "flax refuses cached_partial in tree mode"
