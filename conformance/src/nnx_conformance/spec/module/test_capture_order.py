"""Laws of capture: the captured State lists the sowing submodules in path order."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("property")

LAYERS = 12
"""More than ten layers, so that numeric and string order of the indices differ."""


@pytest.mark.apis("capture", "List", "Module.sow")
def test_captured_intermediates_of_a_list_of_layers_are_keyed_in_numeric_index_order(nnx: Any) -> None:
    class Sower(nnx.Module):
        def __call__(self, x: Any) -> Any:
            self.sow(nnx.Intermediate, "y", x)
            return x

    class Stack(nnx.Module):
        def __init__(self) -> None:
            self.layers = nnx.List([Sower() for _ in range(LAYERS)])

        def __call__(self, x: Any) -> Any:
            for layer in self.layers:
                x = layer(x)
            return x

    _, intermediates = nnx.capture(Stack(), nnx.Intermediate)(jnp.ones(1))
    keys = list(intermediates["layers"].keys())
    assert keys == list(range(LAYERS)), f"the captured State keys the {LAYERS} layers as {keys}, not in numeric order"
