"""nnx.dataclass's keywords, which the other tests leave at their defaults: ``init``,
``eq``, ``order``, ``unsafe_hash``, ``match_args``, ``kw_only``, ``slots`` and
``weakref_slot`` (a Pytree refuses slots), and the dataclass field options that nnx.data
passes on. Each drawn Pytree dataclass is declared with flax.nnx and the implementation,
built, compared, hashed and split, and the outcomes are compared, exception types included."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("module"), IN_GRAPH_MODE]

options = st.fixed_dictionaries(
    {
        "eq": st.booleans(),
        "order": st.booleans(),
        "unsafe_hash": st.booleans(),
        "match_args": st.booleans(),
        "kw_only": st.booleans(),
    }
)


def _outcome(attempt: Any) -> Any:
    """What ``attempt()`` gives, or the name of the exception it raises."""
    try:
        return attempt()
    except Exception as error:  # noqa: BLE001 - the exception type is what is compared
        return type(error).__name__


@pytest.mark.apis("dataclass", "data", "static")
@settings(max_examples=12)
@given(options=options, size=st.integers(1, 3), by_keyword=st.booleans())
def test_a_pytree_dataclass_with_each_option_behaves_as_flax_s(
    nnx: Any, flax_nnx: Any, options: dict[str, Any], size: int, by_keyword: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.dataclass(**options)
        class Point(nnx.Pytree):
            size: int = nnx.static()
            weights: Any = nnx.data(default=None, repr=False, compare=False)

        def build(size: int) -> Any:
            point = Point(size=size) if by_keyword else Point(size)
            point.weights = nnx.Param(jnp.ones(size))
            return point

        first, second = _outcome(lambda: build(size)), _outcome(lambda: build(size + 1))
        if isinstance(first, str) or isinstance(second, str):
            return first, second
        return (
            _outcome(lambda: first == build(size)),
            _outcome(lambda: first < second),
            _outcome(lambda: hash(first) == hash(build(size))),
            getattr(Point, "__match_args__", None),
            "__slots__" in vars(Point),
            _outcome(lambda: repr(first)),
            _outcome(lambda: nnx.state(first)),
        )

    assert_same(flax_nnx, nnx, scenario)


def _declared_without_init(nnx: Any) -> Any:
    @nnx.dataclass(init=False)
    class Point(nnx.Pytree):
        size: int = nnx.static()
        weights: Any = nnx.data(default=None)

    return Point


@pytest.mark.apis("dataclass", "static", "data")
@settings(max_examples=3)
@given(size=st.integers(1, 3))
def test_a_pytree_dataclass_without_init_is_built_bare_as_flax_s_is(nnx: Any, flax_nnx: Any, size: int) -> None:
    def scenario(nnx: Any) -> Any:
        point = _declared_without_init(nnx)()
        point.size = size
        point.weights = nnx.Param(jnp.ones(size))
        return point, nnx.state(point)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("dataclass", "static")
@settings(max_examples=2)
@given(size=st.integers(1, 3), by_keyword=st.booleans())
def test_a_pytree_dataclass_without_init_takes_arguments_as_flax_s_does(
    nnx: Any, flax_nnx: Any, size: int, by_keyword: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        point = _declared_without_init(nnx)
        made = point(size=size) if by_keyword else point(size)
        return made

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("dataclass")
@pytest.mark.parametrize(
    ("options", "named"),
    [({"slots": True}, "__slots__"), ({"slots": True, "weakref_slot": True}, "__weakref__")],
    ids=["slots", "slots and a weakref slot"],
)
def test_a_pytree_dataclass_with_slots_is_refused_as_flax_refuses_it(
    nnx: Any, flax_nnx: Any, options: dict[str, bool], named: str
) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.dataclass(**options)
        class Point(nnx.Pytree):
            size: int = nnx.static()

        return Point(1)

    assert_same(flax_nnx, nnx, scenario, mentions=(named,))
