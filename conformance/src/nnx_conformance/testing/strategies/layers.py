"""nn layer arguments: what differential tests build the same layer from in two implementations.

Plain values only (no nnx objects; an nnx name is drawn as :class:`Named`), so that one
draw builds the layer in both. This module holds what every family shares and the dense
families (Linear, LinearGeneral, Einsum, Embed, LoRA, Dropout); :mod:`.convolution`,
:mod:`.normalization` and :mod:`.sequences` hold the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
"""Leading (batch) axes of a drawn input: one or two axes."""

layer_batches: st.SearchStrategy[tuple[int, ...]] = st.sampled_from([(), (2,), (1, 2)])
"""Leading axes of a drawn layer input: none (an unbatched example), one or two."""


@dataclass(frozen=True)
class Named:
    """A value that is a public name of nnx (a Variable type, a function), looked up on each side."""

    name: str

    def resolve(self, nnx: Any) -> Any:
        return getattr(nnx, self.name)


@dataclass(frozen=True)
class LayerArgs:
    """The arguments of one nn layer (``rngs`` aside), the shape of an input it accepts, and
    the keyword arguments of its call (masks, other inputs, modes)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    input_shape: tuple[int, ...]
    call_kwargs: dict[str, Any] = field(default_factory=dict)

    def keywords(self, nnx: Any) -> dict[str, Any]:
        """``kwargs`` with each :class:`Named` value looked up on ``nnx``."""
        return {key: value.resolve(nnx) if isinstance(value, Named) else value for key, value in self.kwargs.items()}

    def build(self, nnx: Any, layer: str, rngs: Any) -> Any:
        """``nnx.<layer>(*args, **kwargs, rngs=rngs)``."""
        return getattr(nnx, layer)(*self.args, **self.keywords(nnx), rngs=rngs)

    def call(self, layer: Any, x: Any) -> Any:
        """``layer(x, **call_kwargs)``."""
        return layer(x, **self.call_kwargs)


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
def given_options(draw: st.DrawFn, options: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """A drawn subset of ``options`` (by name), each with a drawn value; the rest keep their default."""
    kept = draw(st.sets(st.sampled_from(sorted(options))), label="options given")
    return {name: draw(options[name], label=name) for name in sorted(kept)}


def metadata_values(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """A Variable metadata dict ``{name: 0 or 1}``."""
    return st.integers(0, 1).map(lambda value: {name: value})


def _kernel_option_draws() -> dict[str, st.SearchStrategy[Any]]:
    """The draws of the kernel and bias options the Linear and Einsum families share, by keyword."""
    return {
        "kernel_init": st.sampled_from(KERNEL_INITIALIZERS),
        "bias_init": st.sampled_from(BIAS_INITIALIZERS),
        "precision": st.sampled_from(PRECISIONS),
        "preferred_element_type": st.just(jnp.float32),
        "kernel_metadata": metadata_values("spec_tag"),
        "bias_metadata": metadata_values("bias_tag"),
    }


@st.composite
def kernel_options(draw: st.DrawFn) -> dict[str, Any]:
    """Each of ``kernel_init``, ``bias_init``, ``precision``, ``preferred_element_type``,
    ``kernel_metadata`` and ``bias_metadata``, or the layer's default where the draw leaves it out."""
    return draw(given_options(_kernel_option_draws()))


@st.composite
def linear_args(draw: st.DrawFn) -> LayerArgs:
    """``Linear(in_features, out_features, use_bias=..., dtypes, options)`` and an input of
    zero to two batch axes."""
    in_features = draw(features, label="in_features")
    out_features = draw(features, label="out_features")
    kwargs = {"use_bias": draw(st.booleans(), label="use_bias"), **draw(dtype_args()), **draw(kernel_options())}
    return LayerArgs((in_features, out_features), kwargs, draw(layer_batches, label="batch") + (in_features,))


@st.composite
def linear_general_args(draw: st.DrawFn) -> LayerArgs:
    """``LinearGeneral`` contracting one or two axes anywhere in the input (named by positive
    or negative index, in any order; ``in_features`` follow the axes in increasing order)
    into one or two output axes, with or without a
    ``batch_axis`` (the input's axis 0, which the kernel and bias then span)."""
    contracted = draw(st.integers(1, 2), label="number of contracted axes")
    with_batch_axis = draw(st.booleans(), label="batch_axis given")
    free = draw(st.integers(1 if with_batch_axis else 0, 2), label="number of other axes")
    rank = contracted + free
    positions = draw(
        st.permutations(range(1 if with_batch_axis else 0, rank)).map(lambda p: tuple(p[:contracted])),
        label="contracted axes",
    )
    sizes = [draw(features, label=f"size of axis {axis}") for axis in range(rank)]
    if with_batch_axis:
        sizes[0] = 2
    axis = tuple(p - rank if draw(st.booleans(), label="negative index") else p for p in positions)
    out_shape = tuple(draw(st.lists(features, min_size=1, max_size=2), label="out_features"))
    kwargs = {
        "axis": axis if len(axis) > 1 or draw(st.booleans(), label="axis as a tuple") else axis[0],
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
        **draw(kernel_options()),
    }
    if with_batch_axis:
        kwargs["batch_axis"] = {0: sizes[0]}
    in_shape = tuple(sizes[p] for p in sorted(positions))  # flax pairs them with the axes in sorted order
    return LayerArgs((in_shape, out_shape), kwargs, tuple(sizes))


EINSUM_FORMS = (
    "nta,ab->ntb",
    "nta,hab->nthb",
    "nta,ab->tnb",
    "nta,ba->nbt",
    "nta,nab->ntb",
    "...a,ab->...b",
    " nta , hab -> nthb ",
)
"""Einsum equations over an input and a kernel: the kernel spans output axes in any order,
the input's batch axis or none, an ellipsis stands for any batch axes, spaces are allowed."""


def _einsum_operands(equation: str) -> tuple[str, str, str]:
    """The input, kernel and output axes of ``equation`` (``.`` for the ellipsis)."""
    inputs, output = equation.replace(" ", "").replace("...", ".").split("->")
    lhs, kernel = inputs.split(",")
    return lhs, kernel, output


@st.composite
def einsum_args(draw: st.DrawFn) -> LayerArgs:
    """``Einsum(equation, kernel_shape, bias_shape or None)`` (the equation given to the
    constructor, and again to each call or not) and an input of the equation's axes. The bias spans the
    kernel's axes that the output keeps, in the output's order."""
    equation = draw(st.sampled_from(EINSUM_FORMS), label="equation")
    lhs, kernel_axes, output = _einsum_operands(equation)
    sizes = {axis: draw(features, label=f"size of {axis}") for axis in "ntabh"}
    ellipsis = draw(layer_batches, label="axes of the ellipsis")
    bias_axes = [axis for axis in output if axis in kernel_axes]
    bias = tuple(sizes[axis] for axis in bias_axes) if draw(st.booleans(), label="use_bias") else None
    kernel = tuple(sizes[axis] for axis in kernel_axes)
    input_shape = tuple(s for axis in lhs for s in (ellipsis if axis == "." else (sizes[axis],)))
    options = draw(given_options({k: v for k, v in _kernel_option_draws().items() if k != "bias_metadata"}))
    kwargs = {**draw(dtype_args()), **options}
    call = {"einsum_str": equation} if draw(st.booleans(), label="equation given again at the call") else {}
    return LayerArgs((equation, kernel, bias), kwargs, input_shape, call)


@st.composite
def embed_args(draw: st.DrawFn) -> LayerArgs:
    """``Embed(num_embeddings, features, dtypes, embedding_init, embedding_metadata)``;
    ``input_shape`` is the shape of the ids it looks up (a scalar id included, but for a
    table of one row, which flax 0.12.12 fails to broadcast to a scalar id)."""
    kwargs = {
        **draw(dtype_args()),
        **draw(
            given_options(
                {
                    "embedding_init": st.sampled_from(KERNEL_INITIALIZERS),
                    "embedding_metadata": metadata_values("spec_tag"),
                }
            )
        ),
    }
    args = (draw(st.sampled_from([1, 5]), label="num_embeddings"), draw(features, label="features"))
    batches = layer_batches if args[0] > 1 else batch_shapes  # flax broadcasts a one-row table, not to a scalar id
    return LayerArgs(args, kwargs, draw(batches, label="batch"))


LORA_PARAM_TYPES = (Named("LoRAParam"), Named("Param"))
"""Variable types drawn as ``lora_param_type``."""


@st.composite
def lora_options(draw: st.DrawFn) -> dict[str, Any]:
    """The LoRA keywords LoRA and LoRALinear share (``b_initializer`` aside: the tests give a
    non-zero one), each given or left at its default."""
    return draw(
        given_options(
            {
                "a_initializer": st.sampled_from(KERNEL_INITIALIZERS),
                "lora_param_type": st.sampled_from(LORA_PARAM_TYPES),
                "a_metadata": metadata_values("a_tag"),
                "b_metadata": metadata_values("b_tag"),
            }
        )
    )


@st.composite
def lora_args(draw: st.DrawFn) -> LayerArgs:
    """``LoRA(in_features, lora_rank, out_features, dtypes, options)`` and an input of zero
    to two batch axes."""
    in_features = draw(features, label="in_features")
    args = (in_features, draw(st.sampled_from([1, 2]), label="lora_rank"), draw(features, label="out_features"))
    kwargs = {**draw(dtype_args()), **draw(lora_options())}
    return LayerArgs(args, kwargs, draw(layer_batches, label="batch") + (in_features,))


@st.composite
def lora_linear_args(draw: st.DrawFn) -> LayerArgs:
    """``LoRALinear(in_features, out_features, lora_rank=..., b_initializer=normal, ...)``:
    the Linear's dtypes and options, the LoRA's dtypes and options, and a batched input."""
    in_features, out_features = draw(features, label="in_features"), draw(features, label="out_features")
    lora_dtypes = draw(dtype_args(), label="LoRA dtypes")
    kwargs = {
        "lora_rank": draw(st.sampled_from([1, 2]), label="lora_rank"),
        "b_initializer": jax.nn.initializers.normal(),
        "lora_dtype": lora_dtypes["dtype"],
        "lora_param_dtype": lora_dtypes["param_dtype"],
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
        **draw(lora_options()),
    }
    return LayerArgs((in_features, out_features), kwargs, draw(layer_batches, label="batch") + (in_features,))


@st.composite
def dropout_args(draw: st.DrawFn) -> LayerArgs:
    """``Dropout(rate, broadcast_dims=...)`` (any subset of the input's axes, by positive or
    negative index) and an input of zero to two batch axes; the call is deterministic or
    not by its own argument, or left to the layer."""
    shape = draw(layer_batches, label="batch") + (draw(features, label="features"),)
    dims = draw(st.sets(st.sampled_from(range(len(shape)))), label="broadcast axes")
    negative = draw(st.booleans(), label="negative broadcast_dims")
    kwargs = {"broadcast_dims": tuple(sorted(d - len(shape) if negative else d for d in dims))}
    call = draw(st.sampled_from([{}, {"deterministic": False}, {"deterministic": True}]), label="call keywords")
    return LayerArgs((draw(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]), label="rate"),), kwargs, shape, call)


def layer_input(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A float32 standard normal input of ``shape`` drawn from ``seed`` (by NumPy: no compiling)."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
