"""Errors of the partition names a mapped call moves (``nnx.transform_metadata``, and
``nnx.vmap`` with ``transform_metadata``): the name removed must be the one at that axis,
and the output may not return the input's Variables."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("error")

SHARDING = ("a", "b", "c")


def _model(nnx: Any) -> Any:
    class Model(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.zeros((2, 3, 4)), out_sharding=SHARDING, eager_sharding=False)

    return Model()


MAPPED: dict[str, Callable[[Any, Callable[..., Any]], Callable[..., Any]]] = {
    "transform_metadata": lambda nnx, f: nnx.transform_metadata(f, in_axes=1, partition="c"),
    "vmap": lambda nnx, f: nnx.vmap(f, in_axes=1, transform_metadata={nnx.PARTITION_NAME: "c"}),
}
"""A function mapped over axis 1 of its input as if that axis were named ``'c'``."""


@pytest.mark.apis("transform_metadata", "vmap")
@pytest.mark.parametrize("transform", sorted(MAPPED))
def test_removing_a_partition_name_from_an_axis_of_another_name_raises_and_changes_nothing(
    nnx: Any, transform: str
) -> None:
    model = _model(nnx)
    mapped = MAPPED[transform](nnx, lambda m: None)
    message = f"Expected to remove 'c' at index 1 from {SHARDING!r}, but found 'b'."
    with pytest.raises(ValueError, match=re.escape(message)):
        mapped(model)
    got = model.w.get_metadata()["out_sharding"]
    assert got == SHARDING, f"after the error the Param's out_sharding is {got}, expected {SHARDING} as before"


@pytest.mark.apis("transform_metadata", "vmap")
@pytest.mark.parametrize("transform", sorted(MAPPED))
def test_a_removal_that_fails_for_one_variable_changes_no_other(nnx: Any, transform: str) -> None:
    """Every name to remove is checked before any Variable changes: a Param whose axis 1
    is named 'c', met before the one whose axis 1 is 'b', keeps its name and shape."""
    model = _model(nnx)
    model.a = nnx.Param(jnp.zeros((2, 3, 4)), out_sharding=("x", "c", "y"), eager_sharding=False)
    mapped = MAPPED[transform](nnx, lambda m: None)
    with pytest.raises(ValueError, match=re.escape("Expected to remove 'c' at index 1")):
        mapped(model)
    got = (model.a.get_metadata()["out_sharding"], model.a.shape)
    assert got == (("x", "c", "y"), (2, 3, 4)), f"after the error the other Param is {got}, expected it as before"


@pytest.mark.apis("transform_metadata")
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_transform_metadata_refuses_to_return_an_input_variable_and_restores_it(nnx: Any, graph: bool) -> None:
    model = _model(nnx)

    def update_and_return(m: Any) -> Any:
        m.w.value += 1
        return m.w

    mapped = nnx.transform_metadata(update_and_return, in_axes=1, partition="b", graph=graph)
    # flax names the paths as its graph mode writes them there, as jax key paths in tree mode
    paths = "  - .args[0].__state__['w']\n  - .out.__state__\n" if graph else "  - .args[0].w\n  - .out\n"
    with pytest.raises(
        ValueError, match=r"(?s)Duplicate Param.*" + re.escape(paths) + ".*does not support Variable aliasing"
    ):
        mapped(model)
    got = (model.w.get_metadata()["out_sharding"], float(model.w.value.sum()))
    assert got == (SHARDING, 0.0), f"after the error the Param is {got}, expected {(SHARDING, 0.0)} as it was"


@pytest.mark.apis("transform_metadata")
def test_transform_metadata_in_graph_mode_refuses_one_variable_mapped_along_two_axes(nnx: Any) -> None:
    class Pair(nnx.Module):
        def __init__(self) -> None:
            self.inner = _model(nnx)
            self.b = nnx.Param(jnp.zeros((2, 3, 4)), out_sharding=SHARDING, eager_sharding=False)

    pair, called = Pair(), []
    mapped = nnx.transform_metadata(lambda *m: called.append(m), in_axes=(0, None, 1), partition="a", graph=True)
    message = (
        "Inconsistent aliasing detected. The following nodes have different prefixes:\n"
        "Node: Param\n  0/b: 0\n  1/b: None\nNode: Param\n  0/inner/w: 0\n  1/inner/w: None"
    )
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        mapped(pair, pair, pair.b)
    assert not called, "the function ran although its inputs map one Variable along two axes"
