"""Laws of the activation functions: each equals the formula its docstring states, computed
in float64 numpy on drawn float32 inputs, and ``PReLU`` is ``leaky_relu`` with its learned
slope.

The flax docs render these functions' docstrings (jax.nn's, and ``jnp.tanh``'s): the
formulas below are theirs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_close

pytestmark = pytest.mark.kind("property")

SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717
"""The constants the selu docstring states."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _relu6(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, 0), 6)


def _hard_silu(x: np.ndarray) -> np.ndarray:
    return x * _relu6(x + 3) / 6


def _silu(x: np.ndarray) -> np.ndarray:
    return x * _sigmoid(x)


ELEMENTWISE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "celu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "hard_sigmoid": lambda x: _relu6(x + 3) / 6,
    "hard_silu": _hard_silu,
    "hard_swish": _hard_silu,
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "identity": lambda x: x,
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "log_sigmoid": lambda x: -np.log1p(np.exp(-x)),
    "relu6": _relu6,
    "selu": lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
    "sigmoid": _sigmoid,
    "silu": _silu,
    "swish": _silu,
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "tanh": np.tanh,
}
"""Each entry-by-entry activation's documented formula, at its default arguments."""

WITH_SLOPE: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "celu": lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x / alpha)),
    "elu": lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x)),
    "leaky_relu": lambda x, slope: np.where(x >= 0, x, slope * x),
}
"""The formulas of the activations that take a second scalar (``alpha``, ``negative_slope``)."""

TOLERANCES = {"rtol": 2e-6, "atol": 1e-6}
"""float32 results against float64 formulas: a few units in the last place."""


def _drawn(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 input spread over [-9, 9] or so, where the formulas' branches all show."""
    return 3 * strategies.layer_input(shape, seed)


SHAPES = st.sampled_from([(5,), (2, 4), (2, 3, 2)])


@pytest.mark.apis(*ELEMENTWISE)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@given(shape=SHAPES, seed=strategies.seeds)
def test_each_elementwise_activation_equals_its_documented_formula(
    nnx: Any, name: str, shape: tuple[int, ...], seed: int
) -> None:
    x = _drawn(seed, shape)
    assert_close(f"{name}(x)", getattr(nnx, name)(x), ELEMENTWISE[name](x.astype(np.float64)), **TOLERANCES)


@pytest.mark.apis(*WITH_SLOPE)
@pytest.mark.parametrize("name", sorted(WITH_SLOPE))
@given(scalar=st.sampled_from([0.2, 0.5, 2.0]), seed=strategies.seeds)
def test_activations_with_a_scalar_follow_it_in_their_formula(nnx: Any, name: str, scalar: float, seed: int) -> None:
    x = _drawn(seed, (6,))
    assert_close(
        f"{name}(x, {scalar})",
        getattr(nnx, name)(x, scalar),
        WITH_SLOPE[name](x.astype(np.float64), scalar),
        **TOLERANCES,
    )


@pytest.mark.apis("glu")
@given(axis=st.sampled_from([-1, 0]), seed=strategies.seeds)
def test_glu_gates_the_first_half_by_the_sigmoid_of_the_second(nnx: Any, axis: int, seed: int) -> None:
    x = _drawn(seed, (4, 6))
    first, second = np.split(x.astype(np.float64), 2, axis=axis)
    assert_close(f"glu(x, axis={axis})", nnx.glu(x, axis=axis), first * _sigmoid(second), **TOLERANCES)


def _log_softmax(x: np.ndarray, axis: Any) -> np.ndarray:
    return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))


AXES = st.sampled_from([-1, 0, (0, 1), None])


@pytest.mark.apis("softmax", "log_softmax")
@pytest.mark.parametrize("function", ["softmax", "log_softmax"])
@given(axis=AXES, seed=strategies.seeds)
def test_softmax_and_log_softmax_follow_their_formulas_along_the_axis(
    nnx: Any, function: str, axis: Any, seed: int
) -> None:
    x = _drawn(seed, (3, 4))
    expected = _log_softmax(x.astype(np.float64), axis)
    assert_close(
        f"{function}(x, axis={axis})",
        getattr(nnx, function)(x, axis=axis),
        np.exp(expected) if function == "softmax" else expected,
        **TOLERANCES,
    )


@pytest.mark.apis("logsumexp")
@given(axis=AXES, keepdims=st.booleans(), seed=strategies.seeds)
def test_logsumexp_is_the_log_of_the_sum_of_exponentials(nnx: Any, axis: Any, keepdims: bool, seed: int) -> None:
    x = _drawn(seed, (3, 4))
    expected = np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=keepdims))
    got = nnx.logsumexp(x, axis=axis, keepdims=keepdims)
    assert_close(f"logsumexp(x, axis={axis}, keepdims={keepdims})", got, expected, **TOLERANCES)


@pytest.mark.apis("standardize")
@given(axis=AXES, epsilon=st.sampled_from([1e-5, 0.5]), seed=strategies.seeds)
def test_standardize_centres_and_scales_by_the_variance_plus_epsilon(
    nnx: Any, axis: Any, epsilon: float, seed: int
) -> None:
    x = _drawn(seed, (3, 4)).astype(np.float64)
    centred = x - x.mean(axis=axis, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=axis, keepdims=True) + epsilon)
    assert_close(
        f"standardize(x, axis={axis}, epsilon={epsilon})",
        nnx.standardize(x.astype(np.float32), axis=axis, epsilon=epsilon),
        expected,
        **TOLERANCES,
    )


@pytest.mark.apis("one_hot")
@given(num_classes=st.integers(1, 5), axis=st.sampled_from([-1, 0]), seed=strategies.seeds)
def test_one_hot_sets_the_index_entry_and_zeros_out_of_range(nnx: Any, num_classes: int, axis: int, seed: int) -> None:
    labels = np.random.default_rng(seed).integers(-1, num_classes + 1, (2, 3))
    expected = np.moveaxis((labels[..., None] == np.arange(num_classes)).astype(np.float32), -1, axis)
    got = np.asarray(nnx.one_hot(labels, num_classes, axis=axis))
    assert got.dtype == np.float32, f"one_hot's default dtype: expected float32, got {got.dtype}"
    assert np.array_equal(got, expected), (
        f"one_hot({labels.tolist()}, {num_classes}, axis={axis}): expected {expected.tolist()}, got {got.tolist()}"
    )


@pytest.mark.apis("PReLU")
@given(slope=st.sampled_from([0.01, 0.1, 0.25]), learned=st.sampled_from([-0.5, 0.3, 2.0]), seed=strategies.seeds)
def test_prelu_is_leaky_relu_with_its_negative_slope_parameter(
    nnx: Any, slope: float, learned: float, seed: int
) -> None:
    layer = nnx.PReLU(negative_slope_init=slope)
    parameters = nnx.state(layer, nnx.Param)
    values = [np.asarray(leaf) for leaf in jax.tree.leaves(parameters)]
    assert len(values) == 1 and values[0].shape == () and np.isclose(values[0], slope), (
        f"PReLU(negative_slope_init={slope}) holds one scalar Param of value {slope}, got {values}"
    )
    x = _drawn(seed, (2, 5))
    expected = WITH_SLOPE["leaky_relu"](x.astype(np.float64), float(np.float32(slope)))
    assert_close(f"PReLU(negative_slope_init={slope})(x)", layer(x), expected, **TOLERANCES)
    nnx.update(layer, jax.tree.map(lambda value: np.full_like(value, learned), parameters))
    expected = WITH_SLOPE["leaky_relu"](x.astype(np.float64), float(np.float32(learned)))
    assert_close(f"PReLU with its slope Param set to {learned}, on x", layer(x), expected, **TOLERANCES)
