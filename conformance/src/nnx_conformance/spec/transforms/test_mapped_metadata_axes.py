"""Parity of ``vmap``'s ``transform_metadata`` with flax.nnx over the shapes of Variable
metadata: entering the call it removes the partition name from ``out_sharding`` and each
other named entry from the tuple metadata of that name, at the mapped axis; leaving it,
it inserts them there, padding a shorter tuple with None up to that axis. As in flax,
``vmap`` and ``scan`` move no metadata without graph updates."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

KEYS = ("out_sharding", "tags")
MODES = st.sampled_from([(True, True), (True, False), (False, False)])
"""``(graph, graph_updates)``: graph updates need graph mode."""


def _fields(names: list[Any]) -> st.SearchStrategy[tuple[Any, ...] | None]:
    """A tuple metadata of up to three of ``names``, or none at all."""
    return st.none() | st.lists(st.sampled_from(names), max_size=3).map(tuple)


def _param(nnx: Any, shape: tuple[int, ...], sharding: Any, tags: Any) -> Any:
    """A Param with the given metadata (a None one left out), not sharded when made."""
    metadata = {k: v for k, v in zip(KEYS, (sharding, tags)) if v is not None}
    return nnx.Param(jnp.ones(shape), eager_sharding=False, **metadata)


def _metadata(variable: Any) -> dict[str, Any]:
    """The entries ``transform_metadata`` may move."""
    return {k: v for k, v in variable.get_metadata().items() if k in KEYS}


@pytest.mark.apis("vmap", "PARTITION_NAME")
@pytest.mark.documented(None)
@given(
    ndim=st.integers(0, 2),
    data=st.data(),
    sharding=_fields(["a", None]),
    tags=_fields(["x", "y"]),
    mode=MODES,
)
def test_an_output_variable_gets_the_mapped_axis_in_its_metadata_padded_as_in_flax(
    nnx: Any, flax_nnx: Any, ndim: int, data: Any, sharding: Any, tags: Any, mode: tuple[bool, bool]
) -> None:
    out_axes = data.draw(st.integers(0, ndim), label="out_axes")

    def scenario(nnx: Any) -> Any:
        metadata = {nnx.PARTITION_NAME: "b", "tags": "n"}

        @nnx.vmap(out_axes=out_axes, axis_size=2, transform_metadata=metadata, graph=mode[0], graph_updates=mode[1])
        def init() -> Any:
            return _param(nnx, (3,) * ndim, sharding, tags)

        return _metadata(init())

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax adds the mapped axis to an output's metadata: {outcome.error!r}"


@pytest.mark.apis("vmap", "scan", "PARTITION_NAME")
@pytest.mark.documented(None)
@given(
    ndim=st.integers(1, 3),
    data=st.data(),
    sharding=_fields(["b", "a", None]),
    tags=_fields(["n", "x"]),
    mode=MODES,
    transform_name=st.sampled_from(["vmap", "scan"]),
)
def test_an_input_variable_loses_the_mapped_axis_of_each_named_metadata_inside_the_call_as_in_flax(
    nnx: Any,
    flax_nnx: Any,
    ndim: int,
    data: Any,
    sharding: Any,
    tags: Any,
    mode: tuple[bool, bool],
    transform_name: str,
) -> None:
    in_axes = data.draw(st.integers(0, ndim - 1), label="in_axes")

    def scenario(nnx: Any) -> Any:
        model = nnx.Dict(p=_param(nnx, (2,) * ndim, sharding, tags))
        seen: list[Any] = []
        metadata = {nnx.PARTITION_NAME: "b", "tags": "n"}
        options = {"in_axes": in_axes, "transform_metadata": metadata, "graph": mode[0], "graph_updates": mode[1]}
        transform = nnx.vmap if transform_name == "vmap" else nnx.scan
        transform(lambda m: seen.append(_metadata(m["p"])), **options)(model)
        return seen, _metadata(model["p"])

    assert_same(flax_nnx, nnx, scenario)
