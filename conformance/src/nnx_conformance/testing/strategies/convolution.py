"""Arguments of the convolution layers, Conv and ConvTranspose, and inputs they accept."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from .layers import LayerArgs, dtype_args, kernel_options, layer_batches

CONV_PADDINGS = ("SAME", "VALID", "CIRCULAR", "CAUSAL", "REFLECT", 1, "ints", "pairs")
"""Paddings of drawn Convs: the named modes, an int for every side, and per spatial axis
an int (``ints``) or a (low, high) pair (``pairs``), drawn axis by axis."""

CONV_TRANSPOSE_PADDINGS = ("SAME", "VALID", "CIRCULAR", 1, "ints", "pairs")
"""Paddings of drawn ConvTransposes."""


def per_axis(rank: int, values: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """One ``int`` for every spatial axis, or a tuple of one per axis."""
    return st.one_of(values, st.lists(values, min_size=rank, max_size=rank).map(tuple))


@st.composite
def _padding(draw: st.DrawFn, rank: int, transpose: bool) -> Any:
    paddings = CONV_TRANSPOSE_PADDINGS if transpose else CONV_PADDINGS
    if rank > 1:  # causal padding is defined for one spatial axis only
        paddings = tuple(p for p in paddings if p != "CAUSAL")
    padding = draw(st.sampled_from(paddings), label="padding")
    if padding == "ints":
        return tuple(draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank), label="padding per axis"))
    if padding == "pairs":
        pair = st.tuples(st.integers(0, 2), st.integers(0, 2))
        return tuple(draw(st.lists(pair, min_size=rank, max_size=rank), label="padding pairs"))
    return padding


@st.composite
def conv_args(draw: st.DrawFn, *, transpose: bool = False) -> LayerArgs:
    """``Conv`` (or ``ConvTranspose``) over 1 or 2 spatial axes of 3 or 5, with drawn kernel
    sizes (an int for one axis), strides and dilations (one for all axes or one per axis),
    every padding form, input dilation (Conv, under explicit padding: lax refuses it under a
    named one) and feature groups (Conv) or ``transpose_kernel``,
    a kernel mask or none, and an input of zero to two batch axes."""
    rank = draw(st.integers(1, 2), label="spatial rank")
    kernel_size = tuple(draw(st.lists(st.sampled_from([1, 3]), min_size=rank, max_size=rank), label="kernel_size"))
    spatial = tuple(draw(st.lists(st.sampled_from([3, 5]), min_size=rank, max_size=rank), label="spatial shape"))
    kwargs: dict[str, Any] = {
        "strides": draw(per_axis(rank, st.integers(1, 2)), label="strides"),
        "padding": draw(_padding(rank, transpose)),
        "kernel_dilation": draw(per_axis(rank, st.integers(1, 2)), label="kernel_dilation"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
        **draw(kernel_options()),
    }
    if transpose:
        kwargs["transpose_kernel"] = draw(st.booleans(), label="transpose_kernel")
        groups = 1
    else:
        if not isinstance(kwargs["padding"], str):  # lax dilates inputs under explicit padding only
            kwargs["input_dilation"] = draw(per_axis(rank, st.integers(1, 2)), label="input_dilation")
        groups = draw(st.integers(1, 2), label="feature_group_count")
        kwargs["feature_group_count"] = groups
    in_features = groups * draw(st.integers(1, 2), label="in_features per group")
    out_features = groups * draw(st.integers(1, 2), label="out_features per group")
    if draw(st.booleans(), label="mask given"):
        channels = (in_features // groups, out_features)
        if transpose and kwargs["transpose_kernel"]:
            channels = (out_features, in_features)
        mask_shape = kernel_size + channels
        seed = draw(st.integers(0, 3), label="mask seed")
        kwargs["mask"] = (np.random.default_rng(seed).integers(0, 3, mask_shape) > 0).astype(np.float32)
    size = kernel_size[0] if rank == 1 and draw(st.booleans(), label="kernel_size as an int") else kernel_size
    shape = draw(layer_batches, label="batch") + spatial + (in_features,)
    return LayerArgs((in_features, out_features, size), kwargs, shape)
