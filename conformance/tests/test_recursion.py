"""The recursion gauge: a call that leaves the thread less C recursion than it found fails
a comparison with flax, whose call left it all."""

from __future__ import annotations

import contextlib
import re
from types import SimpleNamespace
from typing import Any

import jax
import pytest

from nnx_conformance.testing import recursion
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.layer_cases import Case, case_difference
from nnx_conformance.testing.outcomes import Side


class _Stop(Exception):
    """Raised from inside jaxlib's flatten."""


def _raise_through_flatten(depth: int) -> None:
    """An exception raised ``depth`` levels into jaxlib's pytree flatten and caught outside it."""
    leaf = [0.0]
    tree: Any = leaf
    for _ in range(depth):
        tree = (tree, 1.0)

    def is_leaf(x: Any) -> bool:
        if x is leaf:
            raise _Stop
        return False

    with contextlib.suppress(_Stop):
        jax.tree_util.tree_flatten(tree, is_leaf=is_leaf)


@pytest.fixture
def leaking_flatten() -> None:
    before = recursion.capacity()
    _raise_through_flatten(3)
    if recursion.capacity() == before:
        pytest.skip("this jaxlib gives back the levels of an exception raised through its flatten: no leak to measure")


def test_the_capacity_is_as_deep_as_a_comparison_reaches_and_the_same_when_nothing_changed() -> None:
    first = recursion.capacity()
    assert 0 < first <= recursion.LIMIT, "the capacity is a depth the interpreter can reach"
    assert recursion.capacity() == first, "measuring again from the same frame gives the same capacity"


def test_a_call_that_leaks_recursion_levels_is_recorded_with_how_many(leaking_flatten: None) -> None:
    outcome = Side(jax).record(lambda _: _raise_through_flatten(4))
    assert outcome.recursion_lost == 4, "each level the exception crossed is lost for good"
    assert Side(jax).record(lambda _: None).recursion_lost == 0, "a call that leaks nothing loses nothing"


def test_an_implementation_losing_levels_flax_keeps_differs_from_flax(leaking_flatten: None) -> None:
    def scenario(nnx: SimpleNamespace) -> int:
        if nnx.leaks:
            _raise_through_flatten(2)
        return 1

    flax = SimpleNamespace(nnx=SimpleNamespace(leaks=False), active=contextlib.nullcontext)
    with pytest.raises(AssertionError, match=re.escape("unable to enter 2 levels of C recursion, flax.nnx's call 0")):
        assert_same(flax, SimpleNamespace(leaks=True), scenario)
    assert_same(flax, SimpleNamespace(leaks=False), scenario)


class _Leaking:
    """An implementation whose layer calls raise through jaxlib's flatten on the way."""

    def __init__(self, nnx: Any) -> None:
        self.nnx = nnx

    def __getattr__(self, name: str) -> Any:
        return getattr(self.nnx, name)


def test_a_layer_case_sees_a_call_that_loses_recursion_levels(leaking_flatten: None) -> None:
    nnx = pytest.importorskip("nnx_reference", reason="a layer case is made of an implementation's objects")
    leaking = _Leaking(nnx)

    def call(n: Any, layer: Any, x: Any) -> Any:
        if n is leaking:
            _raise_through_flatten(3)
        return layer(x)

    case = Case("linear", lambda n, rngs: n.Linear(2, 2, rngs=rngs), jax.numpy.ones((1, 2)), call=call)
    found = case_difference(case, Side(nnx), Side(leaking))
    assert found is not None and found.startswith("in call 1, it leaves the thread unable to enter 3 levels"), found
    assert case_difference(case, Side(nnx), Side(nnx)) is None, "a call that loses nothing agrees"
