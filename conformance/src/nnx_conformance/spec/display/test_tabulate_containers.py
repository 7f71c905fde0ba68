"""Laws of tabulate on models whose submodules sit in containers (nnx.List, nnx.Sequential)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("property")


def layers(nnx: Any, count: int) -> list[Any]:
    """``count`` small layers of a class of this test's own: flax 0.12.12's tabulate leaves
    the methods of the classes it tabulates wrapped, which must not reach other tests'
    ``nnx.Linear`` (a later ``nnx.capture`` of a Linear then recurses without end)."""

    class Linear(nnx.Module):
        def __init__(self) -> None:
            self.kernel = nnx.Param(jnp.ones((2, 2)))

        def __call__(self, x: Any) -> Any:
            return x @ self.kernel

    return [Linear() for _ in range(count)]


@pytest.mark.apis("tabulate", "Sequential")
def test_tabulate_renders_a_sequential_model_and_names_each_layer(nnx: Any) -> None:
    model = nnx.Sequential(*layers(nnx, 3))
    table = nnx.tabulate(model, jnp.ones((1, 2)))
    assert "Sequential" in table, "the tabulate of an nnx.Sequential does not name the Sequential"
    for index in range(3):
        assert f"layers/{index}" in table, f"the tabulate of an nnx.Sequential does not show the row of layers/{index}"
    assert table.count("Linear") >= 3, (
        "the tabulate of an nnx.Sequential of three Linear layers shows fewer than three Linear rows"
    )


@pytest.mark.apis("tabulate", "List")
def test_tabulate_renders_a_model_holding_an_nnx_list_of_layers(nnx: Any) -> None:
    class Stack(nnx.Module):
        def __init__(self) -> None:
            self.blocks = nnx.List(layers(nnx, 2))

        def __call__(self, x: Any) -> Any:
            for block in self.blocks:
                x = block(x)
            return x

    table = nnx.tabulate(Stack(), jnp.ones((1, 2)))
    for index in range(2):
        assert f"blocks/{index}" in table, (
            f"the tabulate of a model with an nnx.List does not show the row of blocks/{index}"
        )
