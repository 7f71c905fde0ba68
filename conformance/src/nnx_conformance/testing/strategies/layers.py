"""nn layer arguments: what differential tests build the same layer from in two implementations.

Plain values only (no nnx objects), so that one draw builds the layer in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

LAYER_DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)
"""The parameter and computation dtypes of drawn layers."""

NORM_DTYPES = (None, *LAYER_DTYPES)
"""Computation dtypes of drawn normalization layers (None: the input's)."""

seeds: st.SearchStrategy[int] = st.integers(0, 2**31 - 1)
"""Seeds of an Rngs or of a drawn input."""

# Few distinct sizes: JAX compiles each operation once per shape, and compiling is what
# a parity example spends its time on.

features: st.SearchStrategy[int] = st.sampled_from([1, 3])
"""Feature sizes of drawn layers: small, so a failing layer prints in a few lines."""

batch_shapes: st.SearchStrategy[tuple[int, ...]] = st.sampled_from([(2,), (1, 2)])
"""Leading (batch) axes of a drawn layer input: one or two axes."""


@dataclass(frozen=True)
class LayerArgs:
    """The arguments of one nn layer (``rngs`` aside) and the shape of an input it accepts."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    input_shape: tuple[int, ...]

    def build(self, nnx: Any, layer: str, rngs: Any) -> Any:
        """``nnx.<layer>(*args, **kwargs, rngs=rngs)``."""
        return getattr(nnx, layer)(*self.args, **self.kwargs, rngs=rngs)


@st.composite
def dtype_args(draw: st.DrawFn) -> dict[str, Any]:
    """``param_dtype`` and ``dtype`` (None: the computation follows the inputs and params)."""
    return {
        "param_dtype": draw(st.sampled_from(LAYER_DTYPES), label="param_dtype"),
        "dtype": draw(st.sampled_from((None, *LAYER_DTYPES)), label="dtype"),
    }


KERNEL_INITIALIZERS = (jax.nn.initializers.normal(0.5), jax.nn.initializers.glorot_uniform())
"""Kernel initializers drawn instead of a layer's default."""

BIAS_INITIALIZERS = (jax.nn.initializers.ones, jax.nn.initializers.normal(0.5))
"""Bias initializers drawn instead of a layer's default."""

PRECISIONS = (jax.lax.Precision.DEFAULT, jax.lax.Precision.HIGHEST, "float32")
"""Matmul precisions drawn instead of a layer's default (None)."""


@st.composite
def kernel_options(draw: st.DrawFn) -> dict[str, Any]:
    """Each of ``kernel_init``, ``bias_init``, ``precision`` and ``kernel_metadata``, or the
    layer's default where the draw leaves it out."""
    options = {
        "kernel_init": draw(st.sampled_from(KERNEL_INITIALIZERS), label="kernel_init"),
        "bias_init": draw(st.sampled_from(BIAS_INITIALIZERS), label="bias_init"),
        "precision": draw(st.sampled_from(PRECISIONS), label="precision"),
        "kernel_metadata": {"spec_tag": draw(st.integers(0, 1), label="kernel_metadata tag")},
    }
    kept = draw(st.sets(st.sampled_from(sorted(options))), label="options given")
    return {name: value for name, value in options.items() if name in kept}


@st.composite
def linear_args(draw: st.DrawFn) -> LayerArgs:
    """``Linear(in_features, out_features, use_bias=..., dtypes)`` and a batched input."""
    in_features = draw(features, label="in_features")
    out_features = draw(features, label="out_features")
    kwargs = {"use_bias": draw(st.booleans(), label="use_bias"), **draw(dtype_args()), **draw(kernel_options())}
    return LayerArgs((in_features, out_features), kwargs, draw(batch_shapes, label="batch") + (in_features,))


@st.composite
def linear_general_args(draw: st.DrawFn) -> LayerArgs:
    """``LinearGeneral`` contracting the last one or two input axes into one or two output axes."""
    in_shape = tuple(draw(st.lists(features, min_size=1, max_size=2), label="in_features"))
    out_shape = tuple(draw(st.lists(features, min_size=1, max_size=2), label="out_features"))
    axis = tuple(range(-len(in_shape), 0))
    kwargs = {
        "axis": axis,
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
        **draw(kernel_options()),
    }
    return LayerArgs((in_shape, out_shape), kwargs, draw(batch_shapes, label="batch") + in_shape)


EINSUM_FORMS = {
    "nta,ab->ntb": ("ab", "b"),
    "nta,hab->nthb": ("hab", "hb"),
    "nta,ab->tnb": ("ab", "b"),
}
"""Einsum equations over an input ``nta``, with the axes of their kernel and bias."""


@st.composite
def einsum_args(draw: st.DrawFn) -> LayerArgs:
    """``Einsum(equation, kernel_shape, bias_shape or None)`` and an input of shape (n, t, a)."""
    equation = draw(st.sampled_from(sorted(EINSUM_FORMS)), label="equation")
    sizes = {axis: draw(features, label=f"size of {axis}") for axis in "ntabh"}
    kernel_axes, bias_axes = EINSUM_FORMS[equation]
    bias = tuple(sizes[axis] for axis in bias_axes) if draw(st.booleans(), label="use_bias") else None
    kernel = tuple(sizes[axis] for axis in kernel_axes)
    return LayerArgs((equation, kernel, bias), draw(dtype_args()), (sizes["n"], sizes["t"], sizes["a"]))


CONV_PADDINGS = ("SAME", "VALID", "CIRCULAR", "CAUSAL", "REFLECT", 1, ((1, 0),))
"""Paddings of drawn Convs: the named modes, an int, and explicit (low, high) pairs per axis."""

CONV_TRANSPOSE_PADDINGS = ("SAME", "VALID", "CIRCULAR", 1)
"""Paddings of drawn ConvTransposes."""


@st.composite
def conv_args(draw: st.DrawFn, *, transpose: bool = False) -> LayerArgs:
    """``Conv`` (or ``ConvTranspose``) over 1 or 2 spatial axes of 3 or 5, with drawn kernel
    sizes, strides, padding, dilation, feature groups (Conv) or ``transpose_kernel``."""
    rank = draw(st.integers(1, 2), label="spatial rank")
    kernel_size = tuple(draw(st.lists(st.sampled_from([1, 3]), min_size=rank, max_size=rank), label="kernel_size"))
    spatial = tuple(draw(st.lists(st.sampled_from([3, 5]), min_size=rank, max_size=rank), label="spatial shape"))
    kwargs: dict[str, Any] = {
        "strides": draw(st.integers(1, 2), label="strides"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
        **draw(kernel_options()),
    }
    paddings = CONV_TRANSPOSE_PADDINGS if transpose else CONV_PADDINGS
    if rank > 1:  # causal padding is defined for one spatial axis only
        paddings = tuple(p for p in paddings if p != "CAUSAL")
    padding = draw(st.sampled_from(paddings), label="padding")
    kwargs["padding"] = padding * rank if isinstance(padding, tuple) else padding
    if transpose:
        kwargs["transpose_kernel"] = draw(st.booleans(), label="transpose_kernel")
        groups = 1
    else:
        kwargs["kernel_dilation"] = draw(st.integers(1, 2), label="kernel_dilation")
        groups = draw(st.integers(1, 2), label="feature_group_count")
        kwargs["feature_group_count"] = groups
    in_features = groups * draw(st.integers(1, 2), label="in_features per group")
    out_features = groups * draw(st.integers(1, 2), label="out_features per group")
    shape = draw(batch_shapes, label="batch") + spatial + (in_features,)
    return LayerArgs((in_features, out_features, kernel_size), kwargs, shape)


@st.composite
def embed_args(draw: st.DrawFn) -> LayerArgs:
    """``Embed(num_embeddings, features)``; ``input_shape`` is the shape of the ids it looks up."""
    kwargs = draw(dtype_args())
    args = (draw(st.sampled_from([1, 5]), label="num_embeddings"), draw(features, label="features"))
    return LayerArgs(args, kwargs, draw(batch_shapes, label="batch"))


@st.composite
def norm_args(draw: st.DrawFn, layer: str) -> LayerArgs:
    """The arguments of the normalization layer ``layer`` and a (batch, h, w, features) input.

    GroupNorm keeps its default ``reduction_axes``: with custom ones flax normalizes
    differently from its documentation by design, so they are not a parity case."""
    kwargs: dict[str, Any] = {"epsilon": draw(st.sampled_from([1e-6, 1e-3]), label="epsilon"), **draw(dtype_args())}
    if layer != "RMSNorm":
        kwargs["use_bias"] = draw(st.booleans(), label="use_bias")
    kwargs["use_scale"] = draw(st.booleans(), label="use_scale")
    if layer in ("BatchNorm", "LayerNorm", "RMSNorm"):
        kwargs["use_fast_variance"] = draw(st.booleans(), label="use_fast_variance")
    if layer == "BatchNorm":
        kwargs["momentum"] = draw(st.sampled_from([0.9, 0.99]), label="momentum")
        kwargs["use_running_average"] = draw(st.booleans(), label="use_running_average")
    if layer in ("LayerNorm", "RMSNorm"):
        kwargs["reduction_axes"] = draw(st.sampled_from([-1, (1, 2, 3), (2, 3)]), label="reduction_axes")
    num_features = draw(features, label="num_features")
    if layer == "GroupNorm":
        groups = draw(st.integers(1, 2), label="num_groups")
        kwargs["num_groups"] = groups
        num_features *= groups
    spatial = tuple(draw(st.lists(st.sampled_from([1, 3]), min_size=2, max_size=2), label="spatial shape"))
    batch = draw(st.sampled_from([1, 2]), label="batch")
    return LayerArgs((num_features,), kwargs, (batch, *spatial, num_features))


ATTENTION_BATCH_SHAPES = ((2,), (1, 2), (2, 1, 1))
"""Batch axes of drawn attention inputs: inputs of rank 3 to 5."""


@st.composite
def attention_args(draw: st.DrawFn) -> LayerArgs:
    """``MultiHeadAttention(num_heads, in_features)`` for self-attention over 3 positions,
    without decoding, with drawn head sizes, output size, biases, qk-normalization,
    dropout (applied or not), dtypes and input rank (few sizes: an attention example
    compiles many operations)."""
    num_heads = draw(st.integers(1, 2), label="num_heads")
    in_features = num_heads * draw(st.sampled_from([1, 2]), label="in features per head")
    kwargs: dict[str, Any] = {
        "qkv_features": num_heads * draw(st.sampled_from([1, 2]), label="qkv features per head"),
        "out_features": draw(st.sampled_from([None, 3]), label="out_features"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        "normalize_qk": draw(st.booleans(), label="normalize_qk"),
        "dropout_rate": draw(st.sampled_from([0.0, 0.5]), label="dropout_rate"),
        "deterministic": draw(st.booleans(), label="deterministic"),
        "broadcast_dropout": draw(st.booleans(), label="broadcast_dropout"),
        "decode": False,
        **draw(dtype_args()),
    }
    batch = draw(st.sampled_from(ATTENTION_BATCH_SHAPES), label="batch")
    return LayerArgs((num_heads, in_features), kwargs, batch + (3, in_features))


RECURRENT_CELLS = ("LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell")


@st.composite
def cell_args(draw: st.DrawFn) -> LayerArgs:
    """``<Cell>(in_features, hidden_features, dtypes)`` and a (batch, time, in_features) input."""
    in_features = draw(features, label="in_features")
    hidden = draw(features, label="hidden_features")
    length = draw(st.sampled_from([1, 3]), label="sequence length")
    return LayerArgs(
        (in_features, hidden), draw(dtype_args()), (draw(st.sampled_from([1, 2]), label="batch"), length, in_features)
    )


@st.composite
def lora_args(draw: st.DrawFn) -> LayerArgs:
    """``LoRA(in_features, lora_rank, out_features, dtypes)`` and a batched input."""
    in_features = draw(features, label="in_features")
    args = (in_features, draw(st.sampled_from([1, 2]), label="lora_rank"), draw(features, label="out_features"))
    return LayerArgs(args, draw(dtype_args()), draw(batch_shapes, label="batch") + (in_features,))


@st.composite
def dropout_args(draw: st.DrawFn) -> LayerArgs:
    """``Dropout(rate, broadcast_dims=...)`` and a batched input of 1 to 4 features."""
    kwargs = {"broadcast_dims": draw(st.sampled_from([(), (0,)]), label="broadcast_dims")}
    shape = draw(batch_shapes, label="batch") + (draw(features, label="features"),)
    return LayerArgs((draw(st.sampled_from([0.0, 0.25, 0.5, 0.9]), label="rate"),), kwargs, shape)


def layer_input(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A float32 standard normal input of ``shape`` drawn from ``seed`` (by NumPy: no compiling)."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
