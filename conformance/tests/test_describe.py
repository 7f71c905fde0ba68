"""The test library's one comparison: ``describe`` and ``difference`` see each kind of
departure a differential or property test relies on them to see."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnx_conformance.testing.describe import array_entry, describe, difference
from nnx_conformance.testing.layer_cases import Case, case_difference
from nnx_conformance.testing.outcomes import Side

nnx = pytest.importorskip("nnx_reference", reason="the descriptions are made of an implementation's objects")


def _param(tag: str = "a") -> Any:
    return nnx.Param(jnp.ones(2), tag=tag)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        (jnp.zeros(2), jnp.zeros(3)),
        (jnp.zeros(2), jnp.zeros(2, jnp.int32)),
        (jnp.zeros(2), jnp.array([0.0, 1e-7])),
        (jnp.array([0.0]), jnp.array([-0.0])),
        (jax.random.key(0), jax.random.key(1)),
        ((1, 2), [1, 2]),
        ({"a": 1}, {"a": 1, "b": 2}),
    ],
    ids=["shape", "dtype", "one value", "sign of zero", "key", "container type", "a key more"],
)
def test_a_description_differs_where_the_values_differ(expected: Any, actual: Any) -> None:
    assert difference(describe(nnx, expected), describe(nnx, actual)) is not None
    assert difference(describe(nnx, expected), describe(nnx, expected)) is None


def test_variables_differ_by_metadata_and_shared_references_by_position() -> None:
    assert difference(describe(nnx, _param("a")), describe(nnx, _param("b"))) is not None
    param = _param()
    shared, distinct = nnx.Dict(w=param, again=param), nnx.Dict(w=_param(), again=_param())
    assert difference(describe(nnx, shared), describe(nnx, distinct)) is not None


def test_an_allowance_accepts_what_it_allows_and_nothing_more() -> None:
    expected, actual = array_entry(np.array([1.0, 2.0])), array_entry(np.array([1.0, 2.5]))
    assert difference(expected, actual, allow=lambda e: 0.5) is None
    assert difference(expected, actual, allow=lambda e: 0.4) is not None
    nan, one = array_entry(np.array([np.nan])), array_entry(np.array([1.0]))
    assert difference(nan, one, allow=lambda e: 1.0) is not None, "a NaN is within no allowance of a number"
    assert difference(nan, nan, allow=lambda e: 1.0) is None, "the same bits always agree"


def test_texts_of_several_lines_differ_by_a_diff_naming_the_line() -> None:
    found = difference("a\nb\nc", "a\nB\nc")
    assert found is not None and "-b" in found and "+B" in found


class _Candidate:
    """The implementation under another name: the cases below misbehave on it alone."""

    def __getattr__(self, name: str) -> Any:
        return getattr(nnx, name)


CANDIDATE = _Candidate()


def _linear(kernel_offset: float) -> Any:
    def build(n: Any, rngs: Any) -> Any:
        layer = n.Linear(2, 2, rngs=rngs)
        if n is CANDIDATE:
            layer.kernel[...] += kernel_offset
        return layer

    return build


def _scaled(n: Any, layer: Any, x: Any) -> Any:
    return layer(x) * (2.0 if n is CANDIDATE else 1.0)


def _scaled_under_grad(n: Any, layer: Any, x: Any) -> Any:
    """The output itself agrees; only its gradient through ``stop_gradient`` differs."""
    y = layer(x)
    return jax.lax.stop_gradient(y) if n is CANDIDATE else y


@pytest.mark.parametrize(
    ("case", "stage"),
    [
        (Case("kernel", _linear(1.0), jnp.ones((1, 2))), "after construction"),
        (Case("output", _linear(0.0), jnp.ones((1, 2)), call=_scaled), "after call 1"),
        (Case("gradient", _linear(0.0), jnp.ones((1, 2)), call=_scaled_under_grad, grad=True), "after the gradient"),
    ],
    ids=["state", "output", "gradient"],
)
def test_a_layer_case_sees_a_departure_at_each_stage(case: Case, stage: str) -> None:
    found = case_difference(case, Side(nnx), Side(CANDIDATE))
    assert found is not None and found.startswith(stage), found
    assert case_difference(case, Side(nnx), Side(nnx)) is None


def test_float0_gradients_which_hold_no_bytes_compare_by_shape() -> None:
    """``grad`` by an integer input gives a float0 array: no bytes to compare, a shape to."""
    zeros = np.zeros((2,), dtype=jax.dtypes.float0)
    assert difference(describe(nnx, zeros), describe(nnx, np.zeros((2,), dtype=jax.dtypes.float0))) is None
    assert difference(describe(nnx, zeros), describe(nnx, np.zeros((3,), dtype=jax.dtypes.float0))) is not None
