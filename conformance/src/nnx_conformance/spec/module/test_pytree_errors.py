"""Error conditions of Pytree attributes: data in static attributes, nnx.static around
data, data/static annotations nested inside containers, and mutation from another trace."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import raises_named

pytestmark = pytest.mark.kind("error")


def _foo(nnx: Any) -> Any:
    class Foo(nnx.Pytree):
        def __init__(self) -> None:
            self.name = "static"
            self.x = jnp.ones(1)

    return Foo()


@pytest.mark.apis("Pytree")
def test_assigning_an_array_to_a_static_attribute_raises(nnx: Any) -> None:
    foo = _foo(nnx)
    with pytest.raises(ValueError, match=r"Cannot assign data value of type .* to static attribute 'name'"):
        foo.name = jnp.ones(1)


@pytest.mark.apis("Pytree", "data")
def test_wrapping_with_data_turns_a_static_attribute_into_data(nnx: Any) -> None:
    # The counterpart of the error above, as its message suggests.
    foo = _foo(nnx)
    foo.name = nnx.data(jnp.ones(2))
    assert len(jax.tree.leaves(foo)) == 2, f"expected 2 leaves after nnx.data, got {jax.tree.leaves(foo)}"


@pytest.mark.apis("Pytree")
def test_a_new_attribute_holding_a_list_of_arrays_raises(nnx: Any) -> None:
    # A plain list is not data, so it would be static, and static values must not hold arrays.
    foo = _foo(nnx)
    with pytest.raises(
        ValueError, match=r"Found data on value of type '<class 'list'>' assigned to static attribute 'items'"
    ):
        foo.items = [jnp.ones(1)]


@pytest.mark.apis("Pytree", "List")
def test_a_list_of_arrays_is_accepted_inside_nnx_list(nnx: Any) -> None:
    foo = _foo(nnx)
    foo.items = nnx.List([jnp.ones(1), jnp.ones(2)])
    assert len(jax.tree.leaves(foo)) == 3, f"expected 3 leaves with nnx.List, got {jax.tree.leaves(foo)}"


@pytest.mark.apis("Pytree", "static")
def test_static_annotation_around_an_array_raises(nnx: Any) -> None:
    foo = _foo(nnx)
    with pytest.raises(ValueError, match=r"annotated with nnx.static\(...\) when setting attribute 'y'"):
        foo.y = nnx.static(jnp.ones(1))


@pytest.mark.apis("Pytree", "data", "static")
def test_data_and_static_marks_inside_a_container_raise(nnx: Any) -> None:
    foo = _foo(nnx)
    with pytest.raises(ValueError, match=r"Found unexpected tags .* on attribute 'Foo.z'"):
        foo.z = [nnx.data(1), nnx.static(2)]


@pytest.mark.apis("Pytree")
def test_pytree_false_skips_the_attribute_checks(nnx: Any) -> None:
    class Loose(nnx.Pytree, pytree=False):
        def __init__(self) -> None:
            self.a = [jnp.array(1), jnp.array(2)]
            self.b = "hello"
            self.b = jnp.array(3)

    loose = Loose()
    assert loose.b.tolist() == 3, "pytree=False should accept any assignment"


@pytest.mark.apis("Pytree", "data")
def test_mutating_a_pytree_from_inside_a_jax_transform_it_was_not_created_in_raises(nnx: Any) -> None:
    class Counter(nnx.Pytree):
        def __init__(self) -> None:
            self.count = nnx.data(0)

    counter = Counter()

    @jax.vmap
    def increment(n: Any) -> None:
        counter.count += 1

    with raises_named("TraceContextError", r"Cannot mutate 'Counter' from different trace level"):
        increment(jnp.arange(3))


def _mixed_in(nnx: Any, init: Any) -> type:
    """A Pytree class whose first base is a plain mixin and whose nearest Pytree base is Base."""

    class Base(nnx.Pytree):
        pass

    class Mixin:
        pass

    class Foo(Mixin, Base):
        __init__ = init

    return Foo


@pytest.mark.apis("Pytree")
def test_the_static_data_error_names_the_nearest_pytree_base_past_a_mixin(nnx: Any) -> None:
    def init(self: Any) -> None:
        self.items = [jnp.ones(1)]

    with pytest.raises(
        ValueError, match=r"(?s)Found data on value.*class Foo\(Base\):\n    items: list = nnx.data\(\)"
    ):
        _mixed_in(nnx, init)()


@pytest.mark.apis("Pytree")
def test_the_check_after_init_names_the_nearest_pytree_base_past_a_mixin(nnx: Any) -> None:
    # The list is static when assigned empty; the array appended to it is found once __init__ ends.
    def init(self: Any) -> None:
        self.items = []
        self.items.append(jnp.ones(1))

    with pytest.raises(
        ValueError, match=r"(?s)Found unexpected data.*class Foo\(Base\):\n    items: list = nnx.data\(\)"
    ):
        _mixed_in(nnx, init)()
