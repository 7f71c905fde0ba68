"""Neural-network layers, activations, initializers and pooling (``flax.nnx.nn``)."""

from nnx_reference.nn import (
    activations,
    attention,
    dtypes,
    initializers,
    linear,
    lora,
    normalization,
    pooling,
    recurrent,
    stochastic,
)
from nnx_reference.nn.activations import *  # noqa: F403
from nnx_reference.nn.attention import (
    MultiHeadAttention,
    RoPE,
    combine_masks,
    dot_product_attention,
    dot_product_attention_with_rope,
    make_attention_mask,
    make_causal_mask,
)
from nnx_reference.nn.initializers import Initializer
from nnx_reference.nn.linear import *  # noqa: F403
from nnx_reference.nn.lora import *  # noqa: F403
from nnx_reference.nn.normalization import *  # noqa: F403
from nnx_reference.nn.pooling import *  # noqa: F403
from nnx_reference.nn.recurrent import (
    RNN,
    Bidirectional,
    GRUCell,
    LSTMCell,
    OptimizedLSTMCell,
    RNNCellBase,
    SimpleCell,
)
from nnx_reference.nn.stochastic import *  # noqa: F403

__all__ = [
    # submodule exposed at the top level as ``nnx.initializers``
    "initializers",
    "Initializer",
    *linear.__all__,
    *normalization.__all__,
    *stochastic.__all__,
    "MultiHeadAttention",
    "RoPE",
    "combine_masks",
    "dot_product_attention",
    "dot_product_attention_with_rope",
    "make_attention_mask",
    "make_causal_mask",
    *lora.__all__,
    *activations.__all__,
    "RNNCellBase",
    "LSTMCell",
    "OptimizedLSTMCell",
    "GRUCell",
    "SimpleCell",
    "RNN",
    "Bidirectional",
    *pooling.__all__,
]
