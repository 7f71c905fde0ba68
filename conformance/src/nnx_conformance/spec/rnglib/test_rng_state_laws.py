"""Laws of the ``RngState`` filter, as the randomness guide shows it: ``nnx.state(model,
nnx.RngState)`` holds "all random states", the key and the count of every stream of every
Rngs in the model and any Variable of a user's own RngState subclass, and nothing else;
its keys and counts are what the ``RngKey`` and ``RngCount`` filters select."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies

pytestmark = pytest.mark.kind("property")

STREAMS = st.lists(st.sampled_from(["params", "dropout", "noise"]), unique=True, max_size=3)


def _leaf_paths(nnx: Any, state: Any, prefix: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """The paths of the Variables a (nested) State holds."""
    paths = set()
    for key, value in state.items():
        paths |= {(*prefix, key)} if isinstance(value, nnx.Variable) else _leaf_paths(nnx, value, (*prefix, key))
    return paths


@pytest.mark.apis("RngState")
@given(seed=strategies.seeds, streams=STREAMS, draws=st.integers(0, 2))
def test_rng_state_selects_the_key_and_count_of_every_stream_and_nothing_else(
    nnx: Any, seed: int, streams: list[str], draws: int
) -> None:
    class Seed(nnx.RngState):
        """Random state of a user's own kind."""

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.seed = Seed(jnp.uint32(seed))
            self.rngs = nnx.Rngs(seed, **{name: seed + i for i, name in enumerate(streams)})
            self.linear = nnx.Linear(2, 2, rngs=self.rngs)

    model = Model()
    for _ in range(draws):
        model.rngs.default()
    expected = {("rngs", stream, part) for stream in ["default", *streams] for part in ("key", "count")}
    expected |= {("seed",)}
    got = _leaf_paths(nnx, nnx.state(model, nnx.RngState))
    assert got == expected, (
        f"the paths nnx.state(model, nnx.RngState) holds: "
        f"expected {sorted(expected, key=str)}, got {sorted(got, key=str)}"
    )
    keys, counts = _leaf_paths(nnx, nnx.state(model, nnx.RngKey)), _leaf_paths(nnx, nnx.state(model, nnx.RngCount))
    assert keys | counts == expected - {("seed",)} and not keys & counts, (
        f"RngKey and RngCount split the Rngs' random state: "
        f"keys {sorted(keys, key=str)}, counts {sorted(counts, key=str)}"
    )
    assert issubclass(nnx.RngKey, nnx.RngState) and issubclass(nnx.RngCount, nnx.RngState), (
        "RngKey and RngCount are RngStates"
    )
