"""The linear layers' keywords that the other tests leave at their defaults: custom
``promote_dtype``, ``dot_general``, ``conv_general_dilated`` and ``einsum_op`` functions
(called as flax calls them: the same arrays, dtypes and keyword names), initializers,
``preferred_element_type``, precisions, LoRA's Variable type and metadata. Each case is
built by flax.nnx and the implementation from a drawn seed and compared output for
output, state for state and gradient for gradient, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import (
    HIGHEST,
    NORMAL,
    OptionCase,
    Promotion,
    assert_runs_as_in_flax,
    dot_general_class,
    scaled_conv,
    scaled_dot_general,
    scaled_einsum,
)

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/linear")]


CASES = (
    OptionCase(
        "Linear with its own dot_general and promote_dtype",
        "Linear",
        (3, 4),
        lambda nnx: {"dot_general": scaled_dot_general(), "promote_dtype": Promotion()},
        (2, 3),
    ),
    OptionCase(
        "Linear bfloat16 accumulating in float32",
        "Linear",
        (3, 4),
        lambda nnx: {"dtype": jnp.bfloat16, "preferred_element_type": jnp.float32},
        (2, 3),
    ),
    OptionCase(
        "LinearGeneral with its own dot_general",
        "LinearGeneral",
        ((5, 3), 4),
        lambda nnx: {"axis": (-2, -1), "dot_general": scaled_dot_general(), "promote_dtype": Promotion()},
        (2, 5, 3),
    ),
    OptionCase(
        "LinearGeneral with a dot_general class",
        "LinearGeneral",
        (3, (2, 4)),
        lambda nnx: {
            "dot_general_cls": dot_general_class(),
            "preferred_element_type": jnp.float32,
            "dtype": jnp.bfloat16,
        },
        (2, 3),
    ),
    OptionCase(
        "Einsum with its own einsum_op, initializers, metadata",
        "Einsum",
        ("nta,hab->nthb", (2, 3, 4), (2, 4)),
        lambda nnx: {
            "einsum_op": scaled_einsum(),
            "promote_dtype": Promotion(),
            "kernel_init": NORMAL,
            "bias_init": NORMAL,
            "precision": HIGHEST,
            "kernel_metadata": {"k": 1},
            "bias_metadata": {"b": 2},
        },
        (2, 5, 3),
    ),
    OptionCase(
        "Einsum bfloat16 accumulating in float32",
        "Einsum",
        ("nta,ab->ntb", (3, 4), (4,)),
        lambda nnx: {"dtype": jnp.bfloat16, "preferred_element_type": jnp.float32},
        (2, 5, 3),
    ),
    OptionCase(
        "Conv with its own convolution and promote_dtype",
        "Conv",
        (3, 4, 3),
        lambda nnx: {
            "conv_general_dilated": scaled_conv(),
            "promote_dtype": Promotion(),
            "bias_metadata": {"b": 2},
            "bias_init": NORMAL,
        },
        (2, 5, 3),
    ),
    OptionCase(
        "Conv bfloat16 accumulating in float32",
        "Conv",
        (3, 4, 3),
        lambda nnx: {"dtype": jnp.bfloat16, "preferred_element_type": jnp.float32},
        (2, 5, 3),
    ),
    OptionCase(
        "ConvTranspose dilated, with promote_dtype and metadata",
        "ConvTranspose",
        (3, 4, 3),
        lambda nnx: {
            "kernel_dilation": 2,
            "promote_dtype": Promotion(),
            "bias_metadata": {"b": 2},
            "bias_init": NORMAL,
        },
        (2, 5, 3),
    ),
    OptionCase(
        "ConvTranspose bfloat16 accumulating in float32",
        "ConvTranspose",
        (3, 4, (3,)),
        lambda nnx: {"dtype": jnp.bfloat16, "preferred_element_type": jnp.float32, "kernel_dilation": (2,)},
        (2, 5, 3),
    ),
    OptionCase(
        "Embed with its own initializer, promote_dtype, metadata",
        "Embed",
        (5, 3),
        lambda nnx: {"embedding_init": NORMAL, "promote_dtype": Promotion(), "embedding_metadata": {"e": 1}},
        (2, 3),
        call=lambda nnx, layer, x: (layer(jnp.array([0, 4, 2])), layer.attend(x)),
    ),
    OptionCase(
        "LoRA with a_initializer, Param type, promote_dtype, metadata",
        "LoRA",
        (3, 2, 4),
        lambda nnx: {
            "a_initializer": NORMAL,
            "b_initializer": NORMAL,
            "lora_param_type": nnx.Param,
            "promote_dtype": Promotion(),
            "a_metadata": {"a": 1},
            "b_metadata": {"b": 2},
        },
        (2, 3),
    ),
    OptionCase(
        "LoRALinear with its LoRA keywords",
        "LoRALinear",
        (3, 4),
        lambda nnx: {
            "lora_rank": 2,
            "lora_dtype": jnp.bfloat16,
            "lora_param_dtype": jnp.bfloat16,
            "a_initializer": NORMAL,
            "b_initializer": NORMAL,
            "lora_param_type": nnx.Param,
            "lora_promote_dtype": Promotion(jnp.float32),
            "a_metadata": {"a": 1},
            "b_metadata": {"b": 2},
        },
        (2, 3),
    ),
)


@pytest.mark.apis("Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose", "Embed", "LoRA", "LoRALinear")
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@settings(max_examples=3)
@given(seed=strategies.seeds, input_seed=strategies.seeds)
def test_a_linear_layer_keyword_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, case: OptionCase, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(case.input_shape, input_seed)
    assert_runs_as_in_flax(flax_nnx, nnx, case.scenario(seed, x))


@pytest.mark.apis("PReLU")
@settings(max_examples=5)
@given(dtypes=strategies.dtype_args(), slope=st.sampled_from([0.01, 0.25]), input_seed=strategies.seeds)
def test_prelu_dtypes_promotion_and_metadata_act_as_in_flax(
    nnx: Any, flax_nnx: Any, dtypes: dict[str, Any], slope: float, input_seed: int
) -> None:
    x = strategies.layer_input((2, 3), input_seed)

    def scenario(nnx: Any) -> Any:
        promotion = Promotion(jnp.float32)
        layer = nnx.PReLU(slope, promote_dtype=promotion, negative_slope_metadata={"s": 1}, **dtypes)
        return layer(x), nnx.state(layer), promotion

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("PReLU")
@pytest.mark.documented(None)
@given(slope=st.sampled_from([0.01, 0.25, -0.5]))
def test_prelu_at_zero_and_its_gradient_there_are_flax_s(nnx: Any, flax_nnx: Any, slope: float) -> None:
    """Zero (and minus zero) is on the identity side: the gradient by the input there is 1."""
    x = jnp.array([-1.0, -0.0, 0.0, 2.0])

    def scenario(nnx: Any) -> Any:
        layer = nnx.PReLU(slope)
        return layer(x), jax.grad(lambda x: layer(x).sum())(x), nnx.grad(lambda m: m(x).sum())(layer)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
