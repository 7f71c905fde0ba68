"""Arguments of the normalization layers (BatchNorm, LayerNorm, RMSNorm, GroupNorm,
InstanceNorm), inputs of drawn rank they accept, and the masks of their calls."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from .layers import LayerArgs, dtype_args, features


def axis_index(draw: st.DrawFn, axis: int, rank: int, label: str) -> int:
    """``axis`` of an input of ``rank`` axes, written as a positive or a negative index."""
    return axis - rank if draw(st.booleans(), label=f"{label} as a negative index") else axis


@st.composite
def broadcast_masks(draw: st.DrawFn, shape: tuple[int, ...], *, features: bool = False) -> np.ndarray:
    """A boolean mask of ``shape`` or of a shape that broadcasts to it (axes of size 1,
    leading axes left out), mostly True; with ``features``, its last axis is the input's
    (GroupNorm splits the mask's last axis into its groups)."""
    kept = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)), label="mask axes kept")
    kept[-1] = kept[-1] or features
    mask_shape = tuple(size if keep else 1 for size, keep in zip(shape, kept))
    mask_shape = mask_shape[draw(st.integers(0, len(shape) - 1), label="mask axes left out") :]
    return np.random.default_rng(draw(st.integers(0, 3), label="mask seed")).integers(0, 4, mask_shape) > 0


@st.composite
def norm_args(draw: st.DrawFn, layer: str) -> LayerArgs:
    """The arguments of the normalization layer ``layer`` and an input of rank 2 to 4
    (batch, spatial..., features), the features on the axis the layer's ``axis`` or
    ``feature_axes`` names (BatchNorm, LayerNorm, RMSNorm, InstanceNorm), LayerNorm's and
    RMSNorm's ``reduction_axes`` any non-empty set of axes; the call given a mask
    broadcastable to the input or none, and BatchNorm's call its own ``use_running_average``.

    GroupNorm keeps its default ``reduction_axes``: with custom ones flax normalizes
    differently from its documentation by design, so they are not a parity case."""
    kwargs: dict[str, Any] = {"epsilon": draw(st.sampled_from([1e-6, 1e-3]), label="epsilon"), **draw(dtype_args())}
    if layer != "RMSNorm":
        kwargs["use_bias"] = draw(st.booleans(), label="use_bias")
    kwargs["use_scale"] = draw(st.booleans(), label="use_scale")
    kwargs["use_fast_variance"] = draw(st.booleans(), label="use_fast_variance")
    num_features = draw(features, label="num_features")
    if layer == "GroupNorm":
        groups = draw(st.integers(1, 2), label="num_groups")
        kwargs["num_groups"] = groups
        num_features *= groups
    rank = draw(st.integers(2, 4), label="input rank")
    feature_axis = rank - 1
    if layer != "GroupNorm" and draw(st.booleans(), label="features on another axis"):
        feature_axis = draw(st.integers(1, rank - 1), label="feature axis")
        name = "axis" if layer == "BatchNorm" else "feature_axes"
        kwargs[name] = axis_index(draw, feature_axis, rank, name)
    sizes = [draw(st.sampled_from([1, 3]), label=f"size of axis {axis}") for axis in range(rank)]
    sizes[0] = draw(st.sampled_from([1, 2]), label="batch")
    sizes[feature_axis] = num_features
    if layer == "BatchNorm":
        kwargs["momentum"] = draw(st.sampled_from([0.9, 0.99]), label="momentum")
        kwargs["use_running_average"] = draw(st.booleans(), label="use_running_average")
    if layer in ("LayerNorm", "RMSNorm"):
        axes = draw(st.sets(st.integers(0, rank - 1), min_size=1), label="reduction_axes")
        written = tuple(axis_index(draw, axis, rank, "reduction axis") for axis in sorted(axes))
        kwargs["reduction_axes"] = written[0] if len(written) == 1 else written
    call: dict[str, Any] = {}
    if draw(st.booleans(), label="mask given"):
        call["mask"] = draw(broadcast_masks(tuple(sizes), features=layer == "GroupNorm"))
    if layer == "BatchNorm" and draw(st.booleans(), label="use_running_average at the call"):
        call["use_running_average"] = draw(st.booleans(), label="use_running_average of the call")
    return LayerArgs((num_features,), kwargs, tuple(sizes), call)
