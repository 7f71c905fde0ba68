"""Differential tests of the pytree structure of layers as flax builds them: which attributes
are data (the children ``jax.tree`` takes, an optional submodule, parameter or stream left
out included, as None) in every configuration that leaves one out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/layers")]

LAYERS: dict[str, Callable[[Any], Any]] = {
    "Linear without bias": lambda nnx: nnx.Linear(2, 3, use_bias=False, rngs=nnx.Rngs(0)),
    "LinearGeneral without bias": lambda nnx: nnx.LinearGeneral(2, 3, use_bias=False, rngs=nnx.Rngs(0)),
    "Conv without bias": lambda nnx: nnx.Conv(2, 3, (3,), use_bias=False, rngs=nnx.Rngs(0)),
    "ConvTranspose without bias": lambda nnx: nnx.ConvTranspose(2, 3, (3,), use_bias=False, rngs=nnx.Rngs(0)),
    "Einsum without bias": lambda nnx: nnx.Einsum("ab,bc->ac", (2, 3), rngs=nnx.Rngs(0)),
    "BatchNorm without scale and bias": lambda nnx: nnx.BatchNorm(3, use_bias=False, use_scale=False, rngs=nnx.Rngs(0)),
    "LayerNorm without scale and bias": lambda nnx: nnx.LayerNorm(3, use_bias=False, use_scale=False, rngs=nnx.Rngs(0)),
    "RMSNorm without scale": lambda nnx: nnx.RMSNorm(3, use_scale=False, rngs=nnx.Rngs(0)),
    "GroupNorm without scale and bias": lambda nnx: nnx.GroupNorm(
        4, num_groups=2, use_bias=False, use_scale=False, rngs=nnx.Rngs(0)
    ),
    "InstanceNorm without scale and bias": lambda nnx: nnx.InstanceNorm(
        3, use_bias=False, use_scale=False, rngs=nnx.Rngs(0)
    ),
    "MultiHeadAttention without qk norms": lambda nnx: nnx.MultiHeadAttention(2, 4, decode=False, rngs=nnx.Rngs(0)),
    "MultiHeadAttention with dropout, no rngs kept": lambda nnx: nnx.MultiHeadAttention(
        2, 4, dropout_rate=0.3, keep_rngs=False, decode=False, rngs=nnx.Rngs(0)
    ),
    "Dropout without rngs": lambda nnx: nnx.Dropout(0.1),
    "LSTMCell without rngs kept": lambda nnx: nnx.LSTMCell(2, 3, keep_rngs=False, rngs=nnx.Rngs(0)),
    "GRUCell without rngs kept": lambda nnx: nnx.GRUCell(2, 3, keep_rngs=False, rngs=nnx.Rngs(0)),
    "OptimizedLSTMCell without rngs kept": lambda nnx: nnx.OptimizedLSTMCell(2, 3, keep_rngs=False, rngs=nnx.Rngs(0)),
    "SimpleCell without rngs kept": lambda nnx: nnx.SimpleCell(2, 3, keep_rngs=False, rngs=nnx.Rngs(0)),
    "LoRA without a base module": lambda nnx: nnx.LoRA(2, 1, 3, rngs=nnx.Rngs(0)),
}


def _public(path: tuple[Any, ...]) -> bool:
    return not any(str(getattr(key, "name", key)).startswith("_") for key in path)


@pytest.mark.apis(*sorted({name.split()[0] for name in LAYERS}))
@pytest.mark.documented(None)
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_has_the_data_attributes_flax_gives_it(nnx: Any, flax_nnx: Any, layer: str) -> None:
    """The paths of ``jax.tree``'s leaves (None counted as a leaf) and of tree-mode
    ``iter_graph``: an attribute left out as None is data where flax makes it so."""

    def scenario(nnx: Any) -> Any:
        module = LAYERS[layer](nnx)
        leaves = jax.tree_util.tree_flatten_with_path(module, is_leaf=lambda x: x is None)[0]
        return (
            [jax.tree_util.keystr(path) for path, _ in leaves if _public(path)],
            [path for path, _ in nnx.iter_graph(module, graph=False) if _public(path)],
        )

    assert_same(flax_nnx, nnx, scenario)
