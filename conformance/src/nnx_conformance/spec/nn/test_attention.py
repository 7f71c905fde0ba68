"""Parity of attention with flax.nnx: inputs of drawn ranks, and MultiHeadAttention's projections' parameters bit for
bit and the same self-attention outputs within rounding, causal or not."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/attention")]


@pytest.mark.apis("MultiHeadAttention")
@given(
    drawn=strategies.attention_args(),
    is_causal=st.booleans(),
    seed=strategies.seeds,
    input_seed=strategies.seeds,
)
def test_multi_head_attention_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, is_causal: bool, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    case = layer_case(
        "MultiHeadAttention",
        drawn,
        seed,
        x,
        call=lambda nnx, layer, x: layer(x, is_causal=is_causal, **drawn.call_kwargs),
    )
    assert_agrees(flax_nnx, nnx, case)


@pytest.mark.apis("MultiHeadAttention", "view")
@given(deterministic=st.sampled_from([None, True, False]), decode=st.sampled_from([None, True, False]))
def test_a_view_sets_the_modes_of_multi_head_attention_as_flax(
    nnx: Any, flax_nnx: Any, deterministic: bool | None, decode: bool | None
) -> None:
    def scenario(nnx: Any) -> Any:
        layer = nnx.MultiHeadAttention(2, 4, dropout_rate=0.5, rngs=nnx.Rngs(0))
        modes = {
            name: value for name, value in (("deterministic", deterministic), ("decode", decode)) if value is not None
        }
        viewed = nnx.view(layer, **modes)
        return viewed.deterministic, viewed.decode, layer.deterministic, layer.decode

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to view the layer with {deterministic=}, {decode=}: {outcome.error!r}"


@pytest.mark.apis("dot_product_attention")
@given(ranks=st.tuples(st.integers(3, 5), st.integers(3, 5), st.integers(3, 5)))
@example(ranks=(4, 4, 5))
@example(ranks=(4, 4, 3))
def test_attention_over_inputs_of_drawn_ranks_runs_or_refuses_them_as_flax(
    nnx: Any, flax_nnx: Any, ranks: tuple[int, int, int]
) -> None:
    """Query, key and value must have one rank (flax's ValueError names the ranks); of equal
    rank they attend over any number of batch axes."""
    shapes = [(2,) * (rank - 3) + (3, 1, 4) for rank in ranks]

    def scenario(nnx: Any) -> Any:
        return nnx.dot_product_attention(*(jnp.ones(shape) for shape in shapes))

    assert_same(flax_nnx, nnx, scenario, mentions=("rank",) if len(set(ranks)) > 1 else ())


@pytest.mark.apis("dot_product_attention")
@given(
    kv_heads=st.sampled_from([1, 2, 4]),
    batch=st.lists(st.just(2), max_size=2).map(tuple),
    dropout_rate=st.sampled_from([0.0, 0.5]),
    seed=strategies.seeds,
)
def test_grouped_query_attention_shares_each_key_head_among_its_query_heads_as_flax(
    nnx: Any, flax_nnx: Any, kv_heads: int, batch: tuple[int, ...], dropout_rate: float, seed: int
) -> None:
    """Four query heads over one, two or four key and value heads, under any number of batch
    axes, with dropout configured but off (deterministic) or none: each key head serves a
    group of consecutive query heads."""
    query = strategies.layer_input((*batch, 3, 4, 5), seed)
    key, value = (strategies.layer_input((*batch, 3, kv_heads, 5), seed + i) for i in (1, 2))

    def scenario(nnx: Any) -> Any:
        return nnx.dot_product_attention(query, key, value, dropout_rate=dropout_rate, deterministic=True)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax attends with grouped heads: {outcome.error!r}"


@pytest.mark.apis("nn.attention.dot_product_attention_weights", "dot_product_attention")
@pytest.mark.documented("api nn/attention page: dropout_rate, deterministic and dropout_rng")
@pytest.mark.parametrize("function", ["dot_product_attention_weights", "dot_product_attention"])
def test_attention_without_dropout_needs_no_dropout_rng_even_when_not_deterministic(
    nnx: Any, flax_nnx: Any, function: str
) -> None:
    query, key = jnp.ones((1, 2, 1, 4)), jnp.arange(12.0).reshape(1, 3, 1, 4)
    arguments = (query, key) if function.endswith("weights") else (query, key, key * 2)

    def scenario(nnx: Any) -> Any:
        return getattr(nnx.nn.attention, function)(*arguments, dropout_rate=0.0, deterministic=False)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax's {function} runs with dropout_rate=0 and no dropout_rng"


@pytest.mark.apis("dot_product_attention", "nn.attention.dot_product_attention_weights")
@pytest.mark.parametrize(
    "lengths", [(2, 3), (3, 2), (3, 3)], ids=lambda lengths: f"{lengths[0]} queries, {lengths[1]} keys"
)
@pytest.mark.parametrize("function", ["dot_product_attention", "dot_product_attention_weights"])
def test_causal_attention_over_as_many_or_other_numbers_of_keys_as_queries_acts_as_flax(
    nnx: Any, flax_nnx: Any, function: str, lengths: tuple[int, int]
) -> None:
    """``is_causal=True`` masks by query and key position, whatever their numbers."""
    queries, keys = lengths

    def scenario(n: Any) -> Any:
        q = jnp.linspace(-1.0, 1.0, queries * 4).reshape(1, queries, 1, 4)
        k = jnp.linspace(-1.0, 2.0, keys * 4).reshape(1, keys, 1, 4)
        attend = (
            n.dot_product_attention
            if function == "dot_product_attention"
            else n.nn.attention.dot_product_attention_weights
        )
        return attend(q, k, k, is_causal=True) if function == "dot_product_attention" else attend(q, k, is_causal=True)

    assert_same(flax_nnx, nnx, scenario)
