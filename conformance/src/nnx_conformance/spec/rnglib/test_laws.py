"""Laws of Rngs and RngStream: key derivation, counts, independence, fork and split."""

from __future__ import annotations

from typing import Any

import jax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies

pytestmark = pytest.mark.kind("property")


def key_bits(key: Any) -> list[Any]:
    """The raw bits of a typed key array, comparable with ==."""
    return jax.random.key_data(key).tolist()


def stream(rngs: Any, name: str) -> Any:
    return getattr(rngs, name)


@pytest.mark.apis("Rngs")
@given(data=st.data())
def test_the_same_seeds_give_the_same_key_sequences(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds, label="seeds")
    calls = data.draw(st.integers(1, 3), label="calls per stream")
    first, second = nnx.Rngs(**seeds), nnx.Rngs(**seeds)
    for name in seeds:
        a = [key_bits(stream(first, name)()) for _ in range(calls)]
        b = [key_bits(stream(second, name)()) for _ in range(calls)]
        assert a == b, f"stream {name!r} seeded {seeds[name]} gave {a} and {b} in two Rngs"


@pytest.mark.apis("Rngs", "RngStream")
@given(data=st.data())
def test_each_key_is_the_seed_key_folded_with_the_count_and_the_count_advances_by_one(
    nnx: Any, data: st.DataObject
) -> None:
    seeds = data.draw(strategies.rng_seeds, label="seeds")
    calls = data.draw(st.integers(1, 3), label="calls per stream")
    rngs = nnx.Rngs(**seeds)
    for name, seed in seeds.items():
        for count in range(calls):
            expected = key_bits(jax.random.fold_in(jax.random.key(seed), count))
            got = key_bits(stream(rngs, name)())
            assert got == expected, (
                f"call {count} of stream {name!r} gave {got}, expected fold_in(key({seed}), {count}) = {expected}"
            )
        assert int(stream(rngs, name).count[...]) == calls, (
            f"stream {name!r} has count {stream(rngs, name).count[...]} after {calls} calls, expected {calls}"
        )


@pytest.mark.apis("Rngs")
@given(data=st.data())
def test_streams_are_independent(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds, label="seeds")
    order = data.draw(st.lists(st.sampled_from(sorted(seeds)), max_size=6), label="calls")
    target = data.draw(st.sampled_from(sorted(seeds)), label="observed stream")
    mixed, alone = nnx.Rngs(**seeds), nnx.Rngs(**seeds)
    got = []
    for name in order:
        key = stream(mixed, name)()
        if name == target:
            got.append(key_bits(key))
    expected = [key_bits(stream(alone, target)()) for _ in range(order.count(target))]
    assert got == expected, f"stream {target!r} gave {got} when interleaved with {order}, expected {expected} alone"


@pytest.mark.apis("Rngs")
@given(data=st.data())
def test_unknown_streams_fall_back_to_default(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds.map(lambda s: {"default": 7, **s}), label="seeds")
    rngs, reference = nnx.Rngs(**seeds), nnx.Rngs(**seeds)
    got = [key_bits(rngs.unknown_stream()), key_bits(rngs())]
    expected = [key_bits(reference.default()), key_bits(reference.default())]
    assert got == expected, f"rngs.unknown_stream() then rngs() gave {got}, expected the default stream's {expected}"


@pytest.mark.apis("Rngs.fork")
@given(data=st.data())
def test_fork_gives_new_keys_on_every_stream(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds, label="seeds")
    rngs = nnx.Rngs(**seeds)
    first, second = rngs.fork(), rngs.fork()
    for name in seeds:
        keys = [key_bits(stream(r, name)()) for r in (rngs, first, second)]
        distinct = {repr(k) for k in keys}
        assert len(distinct) == 3, (
            f"stream {name!r}: parent, first fork and second fork gave {keys}, expected 3 distinct keys"
        )
        assert int(stream(rngs, name).count[...]) == 3, (
            f"stream {name!r} has count {stream(rngs, name).count[...]} after two forks and a call, expected 3"
        )


@pytest.mark.apis("Rngs.split", "split_rngs")
@given(data=st.data())
def test_split_gives_distinct_keys_of_the_requested_shape(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds, label="seeds")
    splits = data.draw(st.integers(2, 4), label="splits")
    via = data.draw(st.sampled_from(["Rngs.split", "split_rngs"]), label="function")
    rngs = nnx.Rngs(**seeds)
    before = {name: key_bits(stream(rngs, name).key[...]) for name in seeds}
    result = rngs.split(splits) if via == "Rngs.split" else nnx.split_rngs(rngs, splits=splits, graph_updates=False)
    for name in seeds:
        keys = stream(result, name).key[...]
        assert keys.shape == (splits,), f"{via}: stream {name!r} has keys of shape {keys.shape}, expected {(splits,)}"
        bits = [repr(key_bits(k)) for k in keys]
        assert len(set(bits)) == splits, f"{via}: stream {name!r} split into repeated keys {bits}"
    if via == "split_rngs":
        after = {name: key_bits(stream(rngs, name).key[...]) for name in seeds}
        assert after == before, f"split_rngs(..., graph_updates=False) changed the original keys: {before} -> {after}"


@pytest.mark.apis("split_rngs")
@given(data=st.data())
def test_split_rngs_splits_only_the_streams_its_filter_selects(nnx: Any, data: st.DataObject) -> None:
    seeds = data.draw(strategies.rng_seeds.filter(lambda s: len(s) > 1), label="seeds")
    only = data.draw(st.sampled_from(sorted(seeds)), label="only")
    result = nnx.split_rngs(nnx.Rngs(**seeds), splits=3, only=only, graph_updates=False)
    shapes = {name: stream(result, name).key[...].shape for name in seeds}
    expected = {name: (3,) if name == only else () for name in seeds}
    assert shapes == expected, f"split_rngs(splits=3, only={only!r}) gave key shapes {shapes}, expected {expected}"
