"""Error conditions of Rngs and the stream functions: unknown streams, bad seeds, bad shapes."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("error")


@pytest.mark.apis("Rngs")
def test_calling_an_unknown_stream_without_a_default_raises_attribute_error(nnx: Any) -> None:
    rngs = nnx.Rngs(params=0, dropout=1)
    with pytest.raises(AttributeError, match=r"No RngStream named 'unkown_stream' found in Rngs"):
        rngs.unkown_stream()


@pytest.mark.apis("Rngs")
def test_indexing_an_unknown_stream_without_a_default_raises_key_error(nnx: Any) -> None:
    rngs = nnx.Rngs(params=0)
    with pytest.raises(KeyError, match=r"No RngStream named 'dropout' found in Rngs"):
        rngs["dropout"]


@pytest.mark.apis("Rngs")
def test_calling_rngs_without_a_default_stream_raises_attribute_error(nnx: Any) -> None:
    rngs = nnx.Rngs(params=0)
    with pytest.raises(AttributeError, match=r"No RngStream named 'default' found in Rngs"):
        rngs()


@pytest.mark.apis("Rngs")
def test_an_unknown_stream_falls_back_to_default_instead_of_raising(nnx: Any) -> None:
    # The counterpart of the errors above: with a default stream there is no error.
    rngs = nnx.Rngs(0, params=1)
    assert rngs.unkown_stream is rngs.default, "an unknown stream should resolve to the default stream"


@pytest.mark.apis("Rngs")
@pytest.mark.parametrize(
    "seed", [2.5, "seed", jnp.array(3), jnp.zeros((2,), jnp.int32)], ids=["float", "str", "int-array", "int32-pair"]
)
def test_rngs_rejects_a_seed_that_is_neither_an_int_nor_a_key(nnx: Any, seed: Any) -> None:
    with pytest.raises(ValueError, match=r"Invalid rng value"):
        nnx.Rngs(seed)


@pytest.mark.apis("RngStream")
def test_rng_stream_requires_a_tag(nnx: Any) -> None:
    with pytest.raises(TypeError, match=r"tag"):
        nnx.RngStream(0)


@pytest.mark.apis("split_rngs")
def test_split_rngs_squeeze_requires_a_single_split(nnx: Any) -> None:
    rngs = nnx.Rngs(0)
    with pytest.raises(ValueError, match=r"squeeze=True is only supported for splits=1"):
        nnx.split_rngs(rngs, splits=3, squeeze=True, graph_updates=False)


@pytest.mark.apis("reseed")
def test_reseed_refuses_a_split_stream_under_the_default_policy(nnx: Any) -> None:
    rngs = nnx.Rngs(0).split(2)
    with pytest.raises(ValueError, match=r"(?s)Cannot reseed .*at path \('default',\).*match_shape"):
        nnx.reseed(rngs, default=1)


@pytest.mark.apis("with_rngs")
def test_with_rngs_does_not_support_graph_updates_in_graph_mode(nnx: Any) -> None:
    rngs = nnx.Rngs(0)
    with pytest.raises(NotImplementedError, match=r"graph=True and graph_updates=True is not supported"):
        nnx.with_rngs(rngs, split=2, graph=True, graph_updates=True)
