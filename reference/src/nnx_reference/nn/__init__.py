"""Neural-network layers, activations, initializers and pooling (``flax.nnx.nn``)."""

from . import (
    activations,
    initializers,
    linear,
    lora,
    normalization,
    pooling,
    stochastic,
)
from . import (
    attention as attention,
)
from . import (
    dtypes as dtypes,
)
from . import (
    recurrent as recurrent,
)
from .activations import *  # noqa: F403
from .attention import (
    MultiHeadAttention,
    RoPE,
    combine_masks,
    dot_product_attention,
    dot_product_attention_with_rope,
    make_attention_mask,
    make_causal_mask,
)
from .initializers import Initializer
from .linear import *  # noqa: F403
from .lora import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .recurrent import (
    RNN,
    Bidirectional,
    GRUCell,
    LSTMCell,
    OptimizedLSTMCell,
    RNNCellBase,
    SimpleCell,
)
from .stochastic import *  # noqa: F403

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
