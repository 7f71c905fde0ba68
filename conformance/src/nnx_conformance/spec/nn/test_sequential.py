"""Differential tests of Sequential: its calls, keyword routing and iteration are flax's, and
it is an iterable of callables as a type (``Sequential[...]`` in annotations)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


@pytest.mark.apis("Sequential")
@given(depth=st.integers(0, 3), seed=strategies.seeds, deterministic=st.booleans())
def test_sequential_calls_and_iterates_its_layers_as_flax(
    nnx: Any, flax_nnx: Any, depth: int, seed: int, deterministic: bool
) -> None:
    x = strategies.layer_input((2, 3), seed)

    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(seed)
        layers = [nnx.Linear(3, 3, rngs=rngs) for _ in range(depth)] + [nnx.relu, nnx.Dropout(0.5, rngs=rngs)]
        model = nnx.Sequential(*layers)
        return model(x, deterministic=deterministic), [type(layer).__name__ for layer in model], nnx.state(model)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Sequential")
@given(arguments=st.integers(1, 3), seed=strategies.seeds)
def test_a_sequential_without_layers_returns_its_input_as_flax(
    nnx: Any, flax_nnx: Any, arguments: int, seed: int
) -> None:
    inputs = [strategies.layer_input((2,), seed + i) for i in range(arguments)]
    assert_same(flax_nnx, nnx, lambda nnx: nnx.Sequential()(*inputs))


@pytest.mark.apis("Sequential")
@given(seed=strategies.seeds, keyword=st.sampled_from(["deterministic", "other"]))
def test_sequential_calls_a_layer_whose_signature_python_cannot_read_without_keywords(
    nnx: Any, flax_nnx: Any, seed: int, keyword: str
) -> None:
    x = strategies.layer_input((3,), seed)
    # the builtin max has no signature inspect can read: flax gives it no keyword argument
    scenario = lambda nnx: nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(seed)), max)(x, **{keyword: True})  # noqa: E731
    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to call max after a Dropout: {outcome.error!r}"


@pytest.mark.apis("Sequential")
def test_sequential_is_an_iterable_type_that_subscripts_as_flax_s(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        alias = nnx.Sequential[nnx.Linear]
        return alias.__origin__.__name__, [arg.__name__ for arg in alias.__args__], issubclass(nnx.Sequential, Iterable)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax subscripts Sequential: {outcome.error!r}"


def _pair(x: Any) -> Any:
    return x, x + 1


def _named(x: Any) -> Any:
    return {"a": x, "b": x * 2}


def _sum(a: Any, b: Any, scale: Any = 1) -> Any:
    return (a + b) * scale


def _scaled(x: Any, *, scale: Any = 1) -> Any:
    return x * scale


def _positional_only(x: Any, /, *, scale: Any = 1) -> Any:
    return x * scale


def _anything(*args: Any, **kwargs: Any) -> Any:
    return (*args, *sorted(kwargs.items()))


LAYERS = {
    "pair": _pair,
    "named": _named,
    "sum": _sum,
    "scaled": _scaled,
    "positional only": _positional_only,
    "anything": _anything,
    "not callable": 3,
}


@pytest.mark.apis("Sequential")
@pytest.mark.documented("api helpers page: Sequential (keyword arguments forwarded to each layer that accepts them)")
@given(
    layers=st.lists(st.sampled_from(sorted(LAYERS)), max_size=3),
    n_args=st.integers(0, 2),
    keywords=st.sampled_from([{}, {"scale": 3}, {"a": 5}, {"scale": 2, "b": 1}]),
)
@example(layers=["named", "sum"], n_args=1, keywords={})  # a dict output is the next layer's keywords
@example(layers=["named", "sum"], n_args=1, keywords={"scale": 2})  # joined with the call's own
@example(layers=["named", "sum"], n_args=1, keywords={"a": 5})  # a keyword given twice
@example(layers=["positional only"], n_args=1, keywords={"scale": 3})  # past a positional-only parameter
def test_sequential_passes_tuples_as_arguments_and_dicts_as_keywords_as_flax(
    nnx: Any, flax_nnx: Any, layers: list[str], n_args: int, keywords: dict[str, int]
) -> None:
    """A layer's tuple output is the next layer's positional arguments, a dict its keyword
    arguments; the call's keywords reach each layer that takes them beyond its positional
    ones; a keyword given twice, a layer that is not callable and an empty Sequential
    (returning its one argument, its arguments, its keywords or None) as flax's."""

    def scenario(nnx: Any) -> Any:
        return nnx.Sequential(*(LAYERS[name] for name in layers))(*range(1, n_args + 1), **keywords)

    assert_same(flax_nnx, nnx, scenario)
