"""Laws of the pooling functions: ``pool``, ``avg_pool``, ``max_pool`` and ``min_pool``
reduce each window of the padded input, as their docstrings state, which a numpy sliding
window over drawn shapes, windows, strides and paddings computes independently.

Inputs are ``(batch, window dims..., features)``; ``'SAME'`` pads each window axis by
``(w - 1) + s * (ceil(n / s) - 1) - (n - 1)`` in all, the lower side getting the smaller
half (XLA's ReduceWindow, which the ``pool`` docstring names)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_close

pytestmark = pytest.mark.kind("property")


class Window(NamedTuple):
    """A drawn pooling case: the input shape and the window, strides and padding over its
    window axes (those between the batch axis and the features)."""

    input_shape: tuple[int, ...]
    window_shape: tuple[int, ...]
    strides: tuple[int, ...]
    padding: str | tuple[tuple[int, int], ...]


@st.composite
def windows(draw: st.DrawFn) -> Window:
    """One or two window axes of size 1 to 5, windows no larger than them, strides 1 or 2,
    and ``'VALID'``, ``'SAME'`` or explicit ``(low, high)`` padding narrower than the window."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=2), label="window axes")
    window_shape = tuple(draw(st.integers(1, size), label="window") for size in sizes)
    strides = tuple(draw(st.integers(1, 2), label="stride") for _ in sizes)
    pads = [st.integers(0, min(1, window - 1)) for window in window_shape]  # no window of padding alone
    explicit = tuple((draw(pad, label="low"), draw(pad, label="high")) for pad in pads)
    padding = draw(st.sampled_from(["VALID", "SAME", explicit]), label="padding")
    return Window((2, *sizes, 3), window_shape, strides, padding)


def _pads(case: Window) -> list[tuple[int, int]]:
    """The (low, high) padding of each window axis."""
    if case.padding == "VALID":
        return [(0, 0)] * len(case.window_shape)
    if case.padding == "SAME":
        pads = []
        for size, window, stride in zip(case.input_shape[1:-1], case.window_shape, case.strides):
            total = max((math.ceil(size / stride) - 1) * stride + window - size, 0)
            pads.append((total // 2, total - total // 2))
        return pads
    return list(case.padding)


def window_reduce(x: np.ndarray, case: Window, fill: float, reduce: Callable[..., np.ndarray]) -> np.ndarray:
    """``reduce`` over every window of ``x`` padded with ``fill``, taken at the strides."""
    padded = np.pad(x, [(0, 0), *_pads(case), (0, 0)], constant_values=fill)
    axes = tuple(range(1, 1 + len(case.window_shape)))
    views = np.lib.stride_tricks.sliding_window_view(padded, case.window_shape, axis=axes)
    views = views[(slice(None), *(slice(None, None, stride) for stride in case.strides))]
    return reduce(views, axis=tuple(range(-len(case.window_shape), 0)))


EXTREMES = {"max_pool": (-np.inf, np.max), "min_pool": (np.inf, np.min)}
"""Each extreme pool's padding value and reduction: padding never wins."""


@pytest.mark.apis(*EXTREMES)
@pytest.mark.parametrize("function", sorted(EXTREMES))
@given(case=windows(), seed=strategies.seeds)
def test_max_and_min_pool_take_the_extreme_of_each_window(nnx: Any, function: str, case: Window, seed: int) -> None:
    x = strategies.layer_input(case.input_shape, seed)
    fill, reduce = EXTREMES[function]
    got = getattr(nnx, function)(x, case.window_shape, strides=case.strides, padding=case.padding)
    assert_close(
        f"{function}(x of {case.input_shape}, {case.window_shape}, {case.strides}, {case.padding!r})",
        got,
        window_reduce(x, case, fill, reduce),
    )


@pytest.mark.apis("avg_pool")
@given(case=windows(), count_include_pad=st.booleans(), seed=strategies.seeds)
def test_avg_pool_averages_each_window_counting_padding_as_asked(
    nnx: Any, case: Window, count_include_pad: bool, seed: int
) -> None:
    x = strategies.layer_input(case.input_shape, seed)
    sums = window_reduce(x.astype(np.float64), case, 0.0, np.sum)
    counts = window_reduce(np.ones_like(x), case, 1.0 if count_include_pad else 0.0, np.sum)
    got = nnx.avg_pool(
        x, case.window_shape, strides=case.strides, padding=case.padding, count_include_pad=count_include_pad
    )
    assert_close(
        f"avg_pool(x of {case.input_shape}, {case.window_shape}, {case.strides}, {case.padding!r}, "
        f"count_include_pad={count_include_pad})",
        got,
        sums / counts,
    )


@pytest.mark.apis("avg_pool")
@given(case=windows(), seed=strategies.seeds)
def test_avg_pool_strides_default_to_one(nnx: Any, case: Window, seed: int) -> None:
    x = strategies.layer_input(case.input_shape, seed)
    unit = case._replace(strides=(1,) * len(case.window_shape))
    expected = window_reduce(x.astype(np.float64), unit, 0.0, np.mean)
    assert_close(
        f"avg_pool(x of {case.input_shape}, {case.window_shape}, padding={case.padding!r})",
        nnx.avg_pool(x, case.window_shape, padding=case.padding),
        expected,
    )


@pytest.mark.apis("pool")
@given(case=windows(), seed=strategies.seeds)
def test_pool_folds_each_window_with_its_reduce_function_from_init(nnx: Any, case: Window, seed: int) -> None:
    x = strategies.layer_input(case.input_shape, seed)
    got = nnx.pool(x, 0.0, jax.lax.add, case.window_shape, case.strides, case.padding)
    assert_close(
        f"pool(x of {case.input_shape}, 0., lax.add, {case.window_shape}, {case.strides}, {case.padding!r})",
        got,
        window_reduce(x.astype(np.float64), case, 0.0, np.sum),
    )
