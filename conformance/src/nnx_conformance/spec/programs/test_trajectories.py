"""Differential tests of whole training runs: realistic models trained 20 steps with
``nnx.Optimizer`` (adam) under ``nnx.jit`` from the same seed give flax's losses,
parameters and batch statistics after every step, bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import optax
import pytest

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

STEPS = 20


def cnn(nnx: Any) -> tuple[Any, Any, Any]:
    """A CNN with BatchNorm and Dropout classifying (8, 6, 6, 1) images into 3 classes."""

    class CNN(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.conv = nnx.Conv(1, 4, (3, 3), rngs=rngs)
            self.norm = nnx.BatchNorm(4, rngs=rngs)
            self.dropout = nnx.Dropout(0.25, rngs=rngs)
            self.head = nnx.Linear(4 * 3 * 3, 3, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            x = nnx.avg_pool(nnx.relu(self.norm(self.conv(x))), (2, 2), strides=(2, 2))
            return self.head(self.dropout(x.reshape(x.shape[0], -1)))

    return CNN(nnx.Rngs(0, dropout=1)), strategies.layer_input((8, 6, 6, 1), 2), jnp.arange(8) % 3


def transformer(nnx: Any) -> tuple[Any, Any, Any]:
    """A one-block transformer over (4, 5) token ids of a 7-word vocabulary."""

    class Transformer(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.embed = nnx.Embed(7, 8, rngs=rngs)
            self.attention = nnx.MultiHeadAttention(
                2, 8, decode=False, dropout_rate=0.1, deterministic=False, rngs=rngs
            )
            self.norm = nnx.LayerNorm(8, rngs=rngs)
            self.mlp = nnx.Sequential(nnx.Linear(8, 16, rngs=rngs), nnx.gelu, nnx.Linear(16, 8, rngs=rngs))
            self.head = nnx.Linear(8, 7, rngs=rngs)

        def __call__(self, ids: Any) -> Any:
            x = self.embed(ids)
            x = x + self.attention(self.norm(x), mask=nnx.make_causal_mask(ids))
            return self.head(x + self.mlp(self.norm(x)))

    ids = jnp.asarray(jnp.arange(20).reshape(4, 5) * 3 % 7)
    return Transformer(nnx.Rngs(0)), ids, jnp.roll(ids, -1, axis=1)


def scanned_mlp(nnx: Any) -> tuple[Any, Any, Any]:
    """An MLP of 3 stacked layers applied with ``nnx.scan`` over the layer axis."""

    class MLP(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            @nnx.split_rngs(splits=3)
            @nnx.vmap(in_axes=(0,), out_axes=0)
            def create(rngs: Any) -> Any:
                return nnx.Linear(4, 4, rngs=rngs)

            self.layers = create(rngs)
            self.head = nnx.Linear(4, 3, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
            def forward(layer: Any, x: Any) -> Any:
                return nnx.relu(layer(x))

            return self.head(forward(self.layers, x))

    return MLP(nnx.Rngs(0)), strategies.layer_input((6, 4), 3), jnp.arange(6) % 3


PROGRAMS: dict[str, Callable[[Any], tuple[Any, Any, Any]]] = {
    "cnn with batch norm and dropout": cnn,
    "transformer block": transformer,
    "mlp scanned over its layers": scanned_mlp,
}


def train(nnx: Any, program: Callable[[Any], tuple[Any, Any, Any]]) -> list[Any]:
    """The loss, parameters and other state after each of :data:`STEPS` adam steps."""
    model, x, labels = program(nnx)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def step(model: Any, optimizer: Any, x: Any, labels: Any) -> Any:
        def loss_fn(model: Any) -> Any:
            return optax.softmax_cross_entropy_with_integer_labels(model(x), labels).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    trajectory = []
    for _ in range(STEPS):
        loss = step(model, optimizer, x, labels)
        trajectory.append((loss, nnx.state(model, nnx.Param), nnx.state(model, nnx.BatchStat)))
    return trajectory


@pytest.mark.apis("Optimizer", "jit", "value_and_grad", "scan", "vmap", "BatchNorm", "Dropout", "MultiHeadAttention")
@pytest.mark.parametrize("program", list(PROGRAMS), ids=list(PROGRAMS))
def test_training_follows_the_trajectory_of_flax(nnx: Any, flax_nnx: Any, program: str) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: train(nnx, PROGRAMS[program]))
    assert outcome.error is None, f"flax failed to train the {program}: {outcome.error!r}"
