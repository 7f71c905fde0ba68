"""Parity of Rngs with flax.nnx: streams named by a mapping; under transforms, an RngStream broadcast into scan with
``StateAxes({...: None})``, and split_rngs/restore_rngs/reseed drawn over seeds and split counts."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("scan", "StateAxes", "Rngs")
@pytest.mark.documented(None)
def test_scan_broadcasting_rngs_draws_what_flax_draws(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(0)

        @nnx.scan(in_axes=(nnx.StateAxes({...: None}), nnx.Carry), out_axes=(nnx.Carry, 0), length=3)
        def draw(rngs: Any, carry: Any) -> Any:
            return carry, rngs.default()

        return draw(rngs, 0), rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Rngs", "RngStream", "split_rngs", "restore_rngs", "reseed")
@pytest.mark.documented("guide:randomness (Rngs streams, split_rngs, fork, reseed)")
@given(seed=st.integers(0, 2**31 - 1), splits=st.integers(1, 3), draws=st.integers(0, 2))
def test_rngs_split_restore_and_reseed_give_flax_keys(
    nnx: Any, flax_nnx: Any, seed: int, splits: int, draws: int
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(seed, dropout=seed + 1)
        drawn = [rngs.params() for _ in range(draws)] + [rngs.dropout.key[...], rngs()]
        backups = nnx.split_rngs(rngs, splits=splits)
        split_keys = rngs.default.key[...]
        nnx.restore_rngs(backups)
        nnx.reseed(rngs, default=seed + 2)
        return drawn, split_keys, rngs, rngs.default()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Rngs")
@pytest.mark.documented("api rnglib page (Rngs takes a mapping of stream names to seeds)")
@given(
    streams=st.dictionaries(
        st.sampled_from(["params", "dropout", "noise"]), st.integers(0, 2**16), min_size=1, max_size=3
    ),
    keywords=st.dictionaries(st.sampled_from(["dropout", "extra"]), st.integers(0, 2**16), max_size=2),
)
def test_rngs_given_a_mapping_makes_its_streams_beside_the_keyword_ones_as_flax(
    nnx: Any, flax_nnx: Any, streams: dict[str, int], keywords: dict[str, int]
) -> None:
    """A mapping given as the first argument names streams, as keywords do (a keyword wins
    over the mapping's entry of the same name); there is no default stream unless named."""

    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(streams, **keywords)
        names = sorted(set(streams) | set(keywords))
        return names, [getattr(rngs, name)() for name in names], rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("restore_rngs", "split_rngs")
@pytest.mark.documented(None)
@given(seed=st.integers(0, 2**16), draws=st.integers(0, 3), with_count=st.booleans())
def test_restore_rngs_puts_back_backups_with_or_without_a_count_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, draws: int, with_count: bool
) -> None:
    """A backup is read by index: (stream, key) puts back the key, (stream, key, count) the count too."""

    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(seed)
        stream = rngs.default
        backup = (stream, stream.key[...], stream.count[...])[: 3 if with_count else 2]
        drawn = [rngs() for _ in range(draws)]
        nnx.restore_rngs([backup])
        return drawn, stream.key[...], stream.count[...], rngs()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Rngs")
@pytest.mark.documented(None)
@given(names=st.lists(st.sampled_from(["params", "dropout", "noise", "default"]), unique=True, max_size=4))
def test_an_rngs_has_the_length_and_names_flax_gives_it(nnx: Any, flax_nnx: Any, names: list[str]) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(**{name: i for i, name in enumerate(names)})
        return len(rngs), sorted(rngs), [name in rngs for name in ("params", "other")]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("split_rngs")
@pytest.mark.documented(None)
@pytest.mark.parametrize("node", ["an array", "a NumPy array", "a dict of arrays", "None"])
def test_split_rngs_over_a_node_without_rngs_acts_as_in_flax(nnx: Any, flax_nnx: Any, node: str) -> None:
    def scenario(nnx: Any) -> Any:
        value = {
            "an array": lambda: jnp.ones(2),
            "a NumPy array": lambda: np.ones(2),
            "a dict of arrays": lambda: {"a": jnp.ones(2)},
            "None": lambda: None,
        }[node]()
        with nnx.split_rngs(value, splits=2):
            return value

    assert_same(flax_nnx, nnx, scenario)


DECORATORS = {
    "split_rngs(splits=2)": lambda n, mode: n.split_rngs(splits=2, graph=mode[0], graph_updates=mode[1]),
    "fork_rngs()": lambda n, mode: n.fork_rngs(graph=mode[0], graph_updates=mode[1]),
    "fork_rngs(split={'noise': 2, 'dropout': (2,)})": lambda n, mode: n.fork_rngs(
        split={"noise": 2, "dropout": (2,)}, graph=mode[0], graph_updates=mode[1]
    ),
}


@pytest.mark.apis("split_rngs", "fork_rngs", "Rngs")
@pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, True), (False, False)],
    ids=lambda mode: f"graph={mode[0]}-graph_updates={mode[1]}",
)
@pytest.mark.parametrize("decorator", sorted(DECORATORS))
def test_split_and_fork_rngs_as_decorators_act_as_flax_in_every_mode(
    nnx: Any, flax_nnx: Any, decorator: str, mode: tuple[bool, bool]
) -> None:
    """The keys and counts the decorated function sees, what it returns, and the Rngs after
    (its streams put back where the decorator works in place, left as they were otherwise)."""

    def scenario(n: Any) -> Any:
        rngs = n.Rngs(0, dropout=1)
        seen = []

        def function(r: Any) -> Any:
            seen.append((r.default.key[...], r.dropout.key[...], r.dropout.count[...]))
            return r

        returned = DECORATORS[decorator](n, mode)(function)(rngs)
        return seen, n.state(returned), returned is rngs, n.state(rngs)

    assert_same(flax_nnx, nnx, scenario)
