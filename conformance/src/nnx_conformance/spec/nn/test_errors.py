"""Error conditions of the nn layers: bad shapes, bad padding, bad mode flags, missing rngs."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("error")

linear = pytest.mark.area("nn/linear")
normalization = pytest.mark.area("nn/normalization")
attention = pytest.mark.area("nn/attention")
stochastic = pytest.mark.area("nn/stochastic")
recurrent = pytest.mark.area("nn/recurrent")
lora = pytest.mark.area("nn/lora")
dtypes = pytest.mark.area("nn/dtypes")


# --- linear -----------------------------------------------------------------------------


@linear
@pytest.mark.apis("Linear")
def test_linear_rejects_inputs_whose_last_axis_is_not_in_features(nnx: Any) -> None:
    layer = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape"):
        layer(jnp.ones((2, 5)))


@linear
@pytest.mark.apis("LinearGeneral")
def test_linear_general_needs_one_in_feature_per_axis(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"in_features and axis must have the same length"):
        nnx.LinearGeneral((2, 3), 4, axis=-1, rngs=nnx.Rngs(0))


@linear
@pytest.mark.apis("Conv")
def test_conv_rejects_inputs_with_the_wrong_feature_count(nnx: Any) -> None:
    layer = nnx.Conv(3, 4, (3,), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"feature dimension"):
        layer(jnp.ones((1, 8, 5)))


@linear
@pytest.mark.apis("Conv")
def test_conv_rejects_an_unknown_padding_string(nnx: Any) -> None:
    layer = nnx.Conv(3, 4, (3,), padding="FOO", rngs=nnx.Rngs(0))
    with pytest.raises(RuntimeError, match=r"Unrecognized padding type"):
        layer(jnp.ones((1, 8, 3)))


@linear
@pytest.mark.apis("Conv")
@pytest.mark.parametrize(
    "padding",
    [[(1, 1)], [(1, 1, 1), (0, 0)], [(1, 1), (1, 1), "SAME"], [(1,), (0, 0)], [(), (0, 0)]],
    ids=["one-pair-for-two-axes", "triple", "two-pairs-and-one-more-entry", "a one-tuple", "an empty tuple"],
)
def test_conv_rejects_a_padding_sequence_that_is_not_one_pair_per_spatial_axis(nnx: Any, padding: Any) -> None:
    layer = nnx.Conv(3, 4, (3, 3), padding=padding, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Invalid padding format"):
        layer(jnp.ones((1, 8, 8, 3)))


@linear
@pytest.mark.apis("Conv")
def test_conv_causal_padding_is_only_for_1d_convolutions(nnx: Any) -> None:
    layer = nnx.Conv(3, 4, (3, 3), padding="CAUSAL", rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Causal padding is only implemented for 1D convolutions"):
        layer(jnp.ones((1, 8, 8, 3)))


@linear
@pytest.mark.apis("Conv", "ConvTranspose")
@pytest.mark.parametrize("layer_name", ["Conv", "ConvTranspose"])
def test_a_convolution_mask_must_have_the_kernel_shape(nnx: Any, layer_name: str) -> None:
    layer = getattr(nnx, layer_name)(3, 4, (3,), mask=jnp.ones((2, 3, 4)), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Mask needs to have the same shape as weights"):
        layer(jnp.ones((1, 8, 3)))


@linear
@pytest.mark.apis("Embed")
def test_embed_rejects_non_integer_ids(nnx: Any) -> None:
    layer = nnx.Embed(5, 3, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Input type must be an integer or unsigned integer"):
        layer(jnp.ones((2,)))


@linear
@pytest.mark.apis("Einsum")
def test_einsum_requires_an_explicit_output(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r'must be explicit and include "->"'):
        nnx.Einsum("ab,bc", (3, 4), rngs=nnx.Rngs(0))


@linear
@pytest.mark.apis("Einsum")
def test_einsum_requires_exactly_two_operands(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"exactly two operands"):
        nnx.Einsum("ab,bc,cd->ad", (3, 4), rngs=nnx.Rngs(0))


@linear
@pytest.mark.apis("Einsum")
def test_einsum_checks_an_equation_given_at_call_time(nnx: Any) -> None:
    layer = nnx.Einsum("ab,bc->ac", (3, 4), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r'must be explicit and include "->"'):
        layer(jnp.ones((2, 3)), "ab,bc")


# --- normalization ----------------------------------------------------------------------


@normalization
@pytest.mark.apis("GroupNorm")
@pytest.mark.parametrize("num_groups", [4, 0])
def test_group_norm_groups_must_divide_the_features(nnx: Any, num_groups: int) -> None:
    with pytest.raises(
        ValueError, match=rf"Number of groups \({num_groups}\) does not divide the number of channels \(6\)"
    ):
        nnx.GroupNorm(6, num_groups=num_groups, rngs=nnx.Rngs(0))


@normalization
@pytest.mark.apis("GroupNorm")
@pytest.mark.parametrize(
    "sizes", [{"num_groups": 3, "group_size": 2}, {"num_groups": None, "group_size": None}], ids=["both", "neither"]
)
def test_group_norm_takes_exactly_one_of_num_groups_and_group_size(nnx: Any, sizes: dict) -> None:
    with pytest.raises(ValueError, match=r"Either `num_groups` or `group_size` should be specified"):
        nnx.GroupNorm(6, rngs=nnx.Rngs(0), **sizes)


@normalization
@pytest.mark.apis("GroupNorm")
def test_group_norm_group_size_must_divide_the_features(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Number of features \(6\) is not multiple of the group size \(4\)"):
        nnx.GroupNorm(6, num_groups=None, group_size=4, rngs=nnx.Rngs(0))


@normalization
@pytest.mark.apis("BatchNorm")
def test_batch_norm_needs_use_running_average_from_the_constructor_or_the_call(nnx: Any) -> None:
    layer = nnx.BatchNorm(3, use_running_average=None, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"No `use_running_average` argument was provided to BatchNorm"):
        layer(jnp.ones((2, 3)))


@normalization
@pytest.mark.apis("BatchNorm")
def test_batch_norm_rejects_inputs_with_the_wrong_feature_count(nnx: Any) -> None:
    layer = nnx.BatchNorm(3, rngs=nnx.Rngs(0))
    with pytest.raises(TypeError, match=r"incompatible shapes"):
        layer(jnp.ones((2, 5)))


@normalization
@pytest.mark.apis("SpectralNorm", "Conv")
def test_spectral_norm_can_refuse_weights_that_are_not_matrices(nnx: Any) -> None:
    rngs = nnx.Rngs(0)
    with pytest.raises(ValueError, match=r"parameter is 3D but error_on_non_matrix is True"):
        nnx.SpectralNorm(nnx.Conv(3, 4, (3,), rngs=rngs), error_on_non_matrix=True, rngs=rngs)


# --- attention --------------------------------------------------------------------------


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_multi_head_attention_features_must_split_evenly_over_heads(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Memory dimension \(4\) must be divisible by 'num_heads' heads \(3\)"):
        nnx.MultiHeadAttention(3, 4, rngs=nnx.Rngs(0))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_multi_head_attention_heads_must_split_evenly_over_kv_heads(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"num_heads \(4\) must be divisible by num_kv_heads \(3\)"):
        nnx.MultiHeadAttention(4, 8, num_kv_heads=3, rngs=nnx.Rngs(0))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_multi_head_attention_needs_decode_from_the_constructor_or_the_call(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"No `decode` argument was provided to MultiHeadAttention"):
        layer(jnp.ones((1, 3, 4)))


OUT_OF_RANGE_RATES = {"negative": -0.1, "one": 1.0, "above one": 1.5, "nan": float("nan")}

RATE_CALLS = {
    "dot_product_attention, deterministic": lambda nnx, rate: nnx.dot_product_attention(
        jnp.ones((1, 3, 2, 4)), jnp.ones((1, 3, 2, 4)), jnp.ones((1, 3, 2, 4)), dropout_rate=rate, deterministic=True
    ),
    "MultiHeadAttention called in eval mode": lambda nnx, rate: nnx.MultiHeadAttention(
        2, 4, dropout_rate=rate, decode=False, rngs=nnx.Rngs(0)
    )(jnp.ones((1, 3, 4)), deterministic=True),
    "MultiHeadAttention called in train mode": lambda nnx, rate: nnx.MultiHeadAttention(
        2, 4, dropout_rate=rate, decode=False, rngs=nnx.Rngs(0, dropout=1)
    )(jnp.ones((1, 3, 4)), deterministic=False),
}


@attention
@pytest.mark.kind("differential")
@pytest.mark.apis("dot_product_attention", "MultiHeadAttention")
@pytest.mark.documented(None)
@pytest.mark.parametrize("rate", OUT_OF_RANGE_RATES)
@pytest.mark.parametrize("call", RATE_CALLS)
def test_attention_refuses_a_dropout_rate_outside_zero_to_one_as_flax(
    nnx: Any, flax_nnx: Any, call: str, rate: str
) -> None:
    """flax's ValueError naming the rate, with or without dropout (never a NaN output)."""
    given = OUT_OF_RANGE_RATES[rate]
    assert_same(flax_nnx, nnx, lambda nnx: RATE_CALLS[call](nnx, given), mentions=("dropout_rate", repr(given)))


@attention
@pytest.mark.kind("differential")
@pytest.mark.apis("MultiHeadAttention")
@pytest.mark.documented(None)
@pytest.mark.parametrize("rate", OUT_OF_RANGE_RATES)
def test_attention_built_with_an_out_of_range_dropout_rate_holds_flax_s_state(
    nnx: Any, flax_nnx: Any, rate: str
) -> None:
    """The rate is checked when the layer is called, not built: the layer built is flax's,
    a kept dropout stream included or not."""
    given = OUT_OF_RANGE_RATES[rate]
    assert_same(
        flax_nnx,
        nnx,
        lambda nnx: nnx.MultiHeadAttention(
            2, 4, dropout_rate=given, keep_rngs=True, decode=False, rngs=nnx.Rngs(0, dropout=1)
        ),
    )


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_decoding_before_init_cache_raises(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, decode=True, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Autoregressive cache not initialized, call ``init_cache`` first"):
        layer(jnp.ones((1, 1, 4)))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_decoding_a_batch_of_another_size_than_the_cache_raises(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, decode=True, rngs=nnx.Rngs(0))
    layer.init_cache((1, 5, 4))
    with pytest.raises(ValueError, match=r"Autoregressive cache shape error"):
        layer(jnp.ones((2, 1, 4)))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_multi_head_attention_refuses_values_without_keys(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, decode=False, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"`inputs_k` cannot be None if `inputs_v` is not None"):
        layer(jnp.ones((1, 3, 4)), None, jnp.ones((1, 3, 4)))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_multi_head_attention_checks_the_query_feature_count(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, decode=False, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Incompatible input dimension, got 5 but module expects 4"):
        layer(jnp.ones((1, 3, 5)))


@attention
@pytest.mark.apis("MultiHeadAttention")
def test_attention_dropout_without_kept_rngs_needs_rngs_at_call_time(nnx: Any) -> None:
    layer = nnx.MultiHeadAttention(2, 4, decode=False, dropout_rate=0.5, keep_rngs=False, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"'rngs' must be provided to __call__"):
        layer(jnp.ones((1, 3, 4)), deterministic=False)


@attention
@pytest.mark.apis("dot_product_attention")
@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((1, 3, 2, 4), (1, 3, 4), (1, 3, 2, 4)), r"must have same rank"),
        (((1, 3, 2, 4), (2, 3, 2, 4), (2, 3, 2, 4)), r"batch dims must match"),
        (((1, 3, 2, 4), (1, 3, 2, 4), (2, 3, 2, 4)), r"batch dims must match"),
        (((2, 3, 2, 4), (2, 3, 2, 4), (1, 3, 2, 4)), r"batch dims must match"),
        (((1, 3, 2, 4), (1, 3, 2, 4), (1, 5, 2, 4)), r"k, v lengths must match, but got 3 and 5"),
        (((1, 3, 4, 4), (1, 3, 3, 4), (1, 3, 3, 4)), r"number of query heads must be a multiple of key/value heads"),
    ],
    ids=["rank", "batch", "value-batch", "smaller-value-batch", "kv-length", "heads"],
)
def test_dot_product_attention_checks_query_key_value_shapes(nnx: Any, shapes: tuple, message: str) -> None:
    query, key, value = (jnp.ones(shape) for shape in shapes)
    with pytest.raises(ValueError, match=message):
        nnx.dot_product_attention(query, key, value)


@attention
@pytest.mark.apis("dot_product_attention")
@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((2, 5, 1, 3), (2, 5, 3)), r"q, k must have same rank, but got 4, 3\."),
        (((1, 5, 1, 3), (2, 5, 1, 3)), r"q, k batch dims must match, but got shapes \(1, 5, 1, 3\), \(2, 5, 1, 3\)\."),
        (((2, 5, 1, 3), (2, 5, 1, 4)), r"q, k depths must match, but got 3 and 4\."),
    ],
    ids=["rank", "batch", "depth"],
)
def test_the_attention_weights_of_flax_nnx_nn_attention_check_query_and_key_shapes(
    nnx: Any, shapes: tuple, message: str
) -> None:
    # flax 0.12.12's messages; the function is public in the flax.nnx.nn.attention module
    query, key = (jnp.ones(shape) for shape in shapes)
    with pytest.raises(ValueError, match=message):
        nnx.nn.attention.dot_product_attention_weights(query, key)


@attention
@pytest.mark.apis("combine_masks")
def test_combine_masks_needs_masks_of_one_rank(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"masks must have same rank"):
        nnx.combine_masks(jnp.ones((2, 3)), jnp.ones((3,)))


@attention
@pytest.mark.apis("RoPE")
def test_rope_needs_a_positive_even_embedding_size(nnx: Any) -> None:
    for size in (5, -2):
        with pytest.raises(ValueError, match=r"`embedding_size` must be positive and even"):
            nnx.RoPE(embedding_size=size, max_seq_len=3)
    with pytest.raises(ValueError, match=r"`embedding_size` must be positive and even"):
        nnx.RoPE()(jnp.ones((1, 3, 5)))


# --- stochastic -------------------------------------------------------------------------


@stochastic
@pytest.mark.apis("Dropout")
def test_dropout_in_training_mode_needs_rngs(nnx: Any) -> None:
    layer = nnx.Dropout(0.5)
    with pytest.raises(ValueError, match=r"no `rngs` argument was provided to Dropout"):
        layer(jnp.ones(3))


@stochastic
@pytest.mark.apis("Dropout")
def test_dropout_needs_deterministic_from_the_constructor_or_the_call(nnx: Any) -> None:
    layer = nnx.Dropout(0.5, deterministic=None, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"No `deterministic` argument was provided to Dropout"):
        layer(jnp.ones(3))


@stochastic
@pytest.mark.apis("Dropout")
def test_dropout_rejects_rngs_of_another_type(nnx: Any) -> None:
    with pytest.raises(TypeError, match=r"rngs must be a Rngs, RngStream or None"):
        nnx.Dropout(0.5, rngs=3)
    with pytest.raises(TypeError, match=r"rngs must be a Rngs, RngStream or jax.Array"):
        nnx.Dropout(0.5)(jnp.ones(3), rngs=3)


# --- recurrent --------------------------------------------------------------------------


@recurrent
@pytest.mark.apis("GRUCell", "LSTMCell")
@pytest.mark.parametrize("cell_name", ["LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell"])
def test_initialize_carry_needs_rngs(nnx: Any, cell_name: str) -> None:
    cell = getattr(nnx, cell_name)(3, 4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"RNGs must be provided to initialize the cell carry"):
        cell.initialize_carry((2, 3))


@recurrent
@pytest.mark.apis("RNN")
def test_rnn_takes_rngs_or_a_bool_for_its_carry_stream(nnx: Any) -> None:
    cell = nnx.GRUCell(3, 4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"Expected rngs to be"):
        nnx.RNN(cell, rngs=None)


@recurrent
@pytest.mark.apis("RNN")
def test_rnn_rejects_inputs_with_the_wrong_feature_count(nnx: Any) -> None:
    layer = nnx.RNN(nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0)))
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape"):
        layer(jnp.ones((2, 5, 7)))


# --- lora / dtypes ----------------------------------------------------------------------


@lora
@pytest.mark.apis("LoRA")
def test_lora_base_module_must_be_callable(nnx: Any) -> None:
    layer = nnx.LoRA(3, 2, 4, base_module=3, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"`self.base_module` must be callable"):
        layer(jnp.ones((2, 3)))


@dtypes
@pytest.mark.apis("nn.dtypes.canonicalize_dtype")
def test_canonicalize_dtype_refuses_an_integer_dtype_when_inexact(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Dtype must be inexact"):
        nnx.nn.dtypes.canonicalize_dtype(jnp.ones(2), dtype=jnp.int32)


MISSING_STREAM = {
    "MultiHeadAttention's dropout": lambda n, rngs: n.MultiHeadAttention(
        2, 4, dropout_rate=0.5, decode=False, rngs=n.Rngs(0)
    )(jnp.ones((1, 3, 4)), deterministic=False, rngs=rngs),
    "a cell's initial carry": lambda n, rngs: n.SimpleCell(3, 4, rngs=n.Rngs(0)).initialize_carry((2, 3), rngs=rngs),
}


@pytest.mark.kind("differential")
@pytest.mark.apis("MultiHeadAttention", "SimpleCell", "Rngs")
@pytest.mark.parametrize("streams", ["default only", "params only"])
@pytest.mark.parametrize("draw", sorted(MISSING_STREAM))
def test_a_layer_drawing_from_rngs_without_its_stream_acts_as_flax(
    nnx: Any, flax_nnx: Any, draw: str, streams: str
) -> None:
    """The default stream stands in for a missing one; without it, flax's AttributeError."""

    def scenario(n: Any) -> Any:
        rngs = n.Rngs(5) if streams == "default only" else n.Rngs(params=5)
        return MISSING_STREAM[draw](n, rngs)

    assert_same(flax_nnx, nnx, scenario)
