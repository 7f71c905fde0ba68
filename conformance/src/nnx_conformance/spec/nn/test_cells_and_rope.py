"""Parity of two nn building blocks with flax.nnx: a cell written on ``RNNCellBase`` run by
``RNN``, and ``dot_product_attention_with_rope`` on drawn queries, keys and values."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _leaky_cell(nnx: Any, features: int, seed: int) -> Any:
    """A cell of one Linear that mixes the input into a decaying carry, written on RNNCellBase."""

    class LeakyCell(nnx.RNNCellBase):
        def __init__(self, rngs: Any) -> None:
            self.mix = nnx.Linear(features, features, rngs=rngs)

        def __call__(self, carry: Any, x: Any) -> tuple[Any, Any]:
            carry = 0.5 * carry + self.mix(x)
            return carry, jnp.tanh(carry)

        def initialize_carry(self, input_shape: tuple[int, ...], rngs: Any = None) -> Any:
            return jnp.zeros((*input_shape[:-1], features))

        @property
        def num_feature_axes(self) -> int:
            return 1

    return LeakyCell(nnx.Rngs(seed))


@pytest.mark.apis("RNNCellBase", "RNN")
@given(
    seed=strategies.seeds,
    input_seed=strategies.seeds,
    features=strategies.features,
    length=st.sampled_from([1, 3]),
    options=st.sampled_from([{}, {"reverse": True, "keep_order": True}, {"return_carry": True}]),
)
def test_a_cell_written_on_rnn_cell_base_runs_in_rnn_as_in_flax(
    nnx: Any, flax_nnx: Any, seed: int, input_seed: int, features: int, length: int, options: dict[str, Any]
) -> None:
    x = strategies.layer_input((2, length, features), input_seed)

    def scenario(nnx: Any) -> Any:
        cell = _leaky_cell(nnx, features, seed)
        return nnx.RNN(cell, **options)(x), cell.num_feature_axes, isinstance(cell, nnx.Module)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("dot_product_attention_with_rope", "RoPE")
@given(
    input_seed=strategies.seeds,
    batch=strategies.batch_shapes,
    length=st.sampled_from([1, 4]),
    heads=st.integers(1, 2),
    head_dim=st.sampled_from([2, 8]),
    theta=st.sampled_from([10_000.0, 100.0]),
    cached=st.booleans(),
)
def test_dot_product_attention_with_rope_rotates_queries_and_keys_as_flax_does(
    nnx: Any,
    flax_nnx: Any,
    input_seed: int,
    batch: tuple[int, ...],
    length: int,
    heads: int,
    head_dim: int,
    theta: float,
    cached: bool,
) -> None:
    # Not drawn: ``input_positions``, which flax 0.12.12 maps over the heads axis (a
    # vmap size error unless there are as many heads as positions).
    shape = (*batch, length, heads, head_dim)
    query, key, value = (strategies.layer_input(shape, input_seed + i) for i in range(3))

    def scenario(nnx: Any) -> Any:
        sizes = {"embedding_size": head_dim, "max_seq_len": 4} if cached else {}
        rope = nnx.RoPE(theta, **sizes)
        return nnx.dot_product_attention_with_rope(query, key, value, rope=rope)

    assert_same(flax_nnx, nnx, scenario)


ODD_CALLS = {
    "RoPE on inputs whose last axis is empty": lambda nnx: nnx.RoPE()(jnp.ones((1, 3, 0))),
    "RoPE on inputs whose last axis is odd": lambda nnx: nnx.RoPE()(jnp.ones((1, 3, 3))),
    "RNN given rngs=1": lambda nnx: nnx.RNN(nnx.SimpleCell(2, 3, rngs=nnx.Rngs(0)), rngs=1)(jnp.ones((1, 2, 2))),
    "RNN given rngs=True": lambda nnx: nnx.RNN(nnx.SimpleCell(2, 3, rngs=nnx.Rngs(0)), rngs=True)(jnp.ones((1, 2, 2))),
}


@pytest.mark.apis("RoPE", "RNN")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", sorted(ODD_CALLS))
def test_edge_arguments_of_rope_and_rnn_act_as_in_flax(nnx: Any, flax_nnx: Any, call: str) -> None:
    assert_same(flax_nnx, nnx, ODD_CALLS[call])


@pytest.mark.apis("RoPE")
@pytest.mark.documented(None)
@given(
    embedding_size=st.sampled_from([None, -2, 0, 2, 3, 4, 8]),
    max_seq_len=st.sampled_from([None, 0, 2, 8]),
    shape=st.lists(st.integers(1, 5), max_size=4).map(tuple),
    dim=st.sampled_from([2, 3, 4, 8]),
)
def test_rope_with_or_without_cached_tables_rotates_or_refuses_as_flax(
    nnx: Any, flax_nnx: Any, embedding_size: int | None, max_seq_len: int | None, shape: tuple[int, ...], dim: int
) -> None:
    """The sizes are given both or neither; cached tables of another size than the input's
    last axis, or shorter than its sequence, are refused when applied."""
    x = jnp.arange(float(math.prod(shape) * dim)).reshape(*shape, dim) / 10

    def scenario(nnx: Any) -> Any:
        rope = nnx.RoPE(embedding_size=embedding_size, max_seq_len=max_seq_len)
        return rope, rope(x)

    assert_same(flax_nnx, nnx, scenario)
