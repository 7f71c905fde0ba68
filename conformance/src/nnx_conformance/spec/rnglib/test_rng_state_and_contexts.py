"""Parity with flax.nnx of three names seen through what they select or set: the ``RngState``
filter, ``current_update_context`` inside and outside ``update_context``, and the
``logical_axis_rules`` that turn sharding names into a partition spec."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

STREAMS = st.lists(st.sampled_from(["params", "dropout", "noise"]), unique=True, max_size=3)


@pytest.mark.apis("RngState", "state")
@given(seed=strategies.seeds, streams=STREAMS, draws=st.integers(0, 2))
def test_rng_state_selects_every_key_and_count_of_the_streams_and_its_own_subclasses(
    nnx: Any, flax_nnx: Any, seed: int, streams: list[str], draws: int
) -> None:
    def scenario(nnx: Any) -> Any:
        class Seed(nnx.RngState):
            """Rng state of a user's own kind."""

        rngs = nnx.Rngs(seed, **{name: seed + i for i, name in enumerate(streams)})
        for _ in range(draws):
            rngs.default()
        layer = nnx.Dropout(0.5, rngs=rngs)
        layer.norm = nnx.BatchNorm(2, rngs=rngs)
        layer.seed = Seed(jnp.uint32(seed))
        return nnx.state(layer, nnx.RngState), nnx.state(layer, nnx.Not(nnx.RngState))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("current_update_context", "update_context")
@pytest.mark.parametrize("inside", [True, False], ids=["inside its update_context", "outside any"])
def test_current_update_context_is_the_innermost_one_of_its_tag(nnx: Any, flax_nnx: Any, inside: bool) -> None:
    def scenario(nnx: Any) -> Any:
        if not inside:
            return nnx.current_update_context("spec-tag")
        with nnx.update_context("spec-tag") as outer, nnx.update_context("other-tag") as other:
            found = nnx.current_update_context("spec-tag")
            return found is outer, found is other, type(found).__name__

    assert_same(flax_nnx, nnx, scenario, mentions=() if inside else ("spec-tag",))


@pytest.mark.apis("logical_axis_rules", "get_partition_spec")
@given(
    names=st.tuples(st.sampled_from(["embed", "mlp", None]), st.sampled_from(["embed", "mlp", None])),
    rules=st.lists(
        st.tuples(st.sampled_from(["embed", "mlp"]), st.sampled_from(["data", "model", None])),
        unique_by=lambda rule: rule[0],
        max_size=2,
    ),
)
def test_logical_axis_rules_map_sharding_names_to_mesh_axes(
    nnx: Any, flax_nnx: Any, names: tuple[str | None, str | None], rules: list[tuple[str, str | None]]
) -> None:
    def scenario(nnx: Any) -> Any:
        with nnx.use_eager_sharding(False):
            layer = nnx.Linear(2, 3, kernel_metadata={"sharding_names": names}, rngs=nnx.Rngs(0))
            with nnx.logical_axis_rules(rules):
                inside = nnx.get_partition_spec(nnx.state(layer))
            return inside, nnx.get_partition_spec(nnx.state(layer))

    assert_same(flax_nnx, nnx, scenario)
