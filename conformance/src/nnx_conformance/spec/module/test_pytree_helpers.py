"""Differential tests of the pytree helpers: ``Object`` (an NNX object that is not a pytree),
``nnx.dataclass``, the ``Dict`` and ``List`` Modules (their equality, hash and keys too) and
``register_data_type`` leave flax's state, leaves and results."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("module/pytree")]

KEYS = st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True)


@pytest.mark.apis("Object")
@given(
    size=st.integers(1, 4), static=st.integers(-2, 2), graph=st.sampled_from([None, True, False]), nested=st.booleans()
)
def test_an_object_is_a_graph_node_but_a_single_pytree_leaf_as_in_flax(
    nnx: Any, flax_nnx: Any, size: int, static: int, graph: bool | None, nested: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Holder(nnx.Object):
            def __init__(self) -> None:
                self.p = nnx.Param(jnp.arange(float(size)))
                self.n = static

        class Parent(nnx.Module):
            def __init__(self) -> None:
                self.holder = Holder()

        holder = Holder()
        leaves = jax.tree.leaves(holder)
        graphdef, state = nnx.split(Parent() if nested else holder, graph=graph)  # tree mode refuses an Object
        return [leaf is holder for leaf in leaves], state, nnx.merge(graphdef, state)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("dataclass")
@given(a=st.integers(-3, 3), order=st.booleans(), kw_only=st.booleans(), frozen_eq=st.booleans())
def test_an_nnx_dataclass_has_the_fields_leaves_and_comparisons_of_flax(
    nnx: Any, flax_nnx: Any, a: int, order: bool, kw_only: bool, frozen_eq: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.dataclass(order=order, kw_only=kw_only, eq=frozen_eq)
        class Point(nnx.Pytree):
            a: int
            p: nnx.Param = nnx.data()

        def make(value: int) -> Any:
            param = nnx.Param(jnp.full((2,), float(value)))
            return Point(a=value, p=param) if kw_only else Point(value, param)

        first, second = make(a), make(a + 1)
        compared = [first == first, first == second]
        if order:
            compared.append(first < second)
        return first, jax.tree.leaves(second), compared, nnx.state(second)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Dict")
@given(keys=KEYS, removed=st.integers(0, 3), static=st.booleans())
def test_a_dict_module_keeps_its_items_in_its_state_as_flax(
    nnx: Any, flax_nnx: Any, keys: list[str], removed: int, static: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        items = {key: nnx.Param(jnp.full((1,), float(i))) for i, key in enumerate(keys)}
        if static:
            items["static"] = len(keys)
        module = nnx.Dict(items)
        del module[keys[removed % len(keys)]]
        module["added"] = nnx.BatchStat(jnp.zeros(2))
        return sorted(module.keys()), len(module), nnx.state(module), "added" in module, repr(module)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("register_data_type")
@given(size=st.integers(1, 3), as_decorator=st.booleans())
def test_a_registered_data_type_is_state_of_a_module_as_in_flax(
    nnx: Any, flax_nnx: Any, size: int, as_decorator: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Box:
            def __init__(self, value: Any) -> None:
                self.value = value

        registered = nnx.register_data_type(Box) if as_decorator else Box
        if not as_decorator:
            nnx.register_data_type(Box)

        class Model(nnx.Module):
            def __init__(self) -> None:
                self.box = Box(jnp.ones(size))
                self.plain = size

        model = Model()
        state = nnx.state(model)
        return (
            registered is Box,
            sorted(str(path) for path, _ in nnx.to_flat_state(state)),
            [type(leaf).__name__ for _, leaf in nnx.to_flat_state(state)],
        )

    assert_same(flax_nnx, nnx, scenario)


KINDS = st.sampled_from(["int", "Param", "data"])
"""What a List item is: a plain int (static), a new Param, or an int marked ``nnx.data``."""


def _item(nnx: Any, kind: str, value: int) -> Any:
    return {"int": lambda: value, "Param": lambda: nnx.Param(jnp.full(1, value)), "data": lambda: nnx.data(value)}[
        kind
    ]()


def _list_step(nnx: Any, made: Any, step: tuple[str, int, int, str]) -> None:
    """Applies one drawn operation; indices are taken modulo the length where one is needed."""
    name, first, second, kind = step
    size = len(made)
    value = _item(nnx, kind, 10 + first)
    at = first % size if size else 0
    operations = {
        "append": lambda: made.append(value),
        "insert": lambda: made.insert(first, value),
        "extend": lambda: made.extend([value, 5]),
        "set": lambda: made.__setitem__(at, value),
        "set a slice": lambda: made.__setitem__(slice(first, second), [value] * len(range(size)[first:second])),
        "delete": lambda: made.__delitem__(at),
        "delete a slice": lambda: made.__delitem__(slice(first, second, 1 + second % 2)),
        "pop": lambda: made.pop(at),
        "pop the last": lambda: made.pop(),
        "remove": lambda: made.remove(made[at]),
        "reverse": lambda: made.reverse(),
        "clear": lambda: made.clear(),
    }
    if size or name in ("append", "insert", "extend", "reverse", "clear", "delete a slice", "set a slice"):
        operations[name]()


LIST_STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "append",
                "insert",
                "extend",
                "set",
                "set a slice",
                "delete",
                "delete a slice",
                "pop",
                "pop the last",
                "remove",
                "reverse",
                "clear",
            ]
        ),
        st.integers(-4, 5),
        st.integers(-4, 6),
        KINDS,
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.apis("List")
@pytest.mark.documented(None)
@given(kinds=st.lists(KINDS, max_size=5), steps=LIST_STEPS)
@example(kinds=["Param", "int", "int"], steps=[("insert", 0, 0, "int")])
@example(kinds=["int", "int", "int", "int"], steps=[("insert", 2, 0, "Param")])
@example(kinds=["int", "Param", "data"], steps=[("insert", -1, 0, "int"), ("delete", 0, 0, "int")])
@example(kinds=["Param", "Param", "int", "int"], steps=[("delete a slice", 0, 2, "int"), ("append", 0, 0, "Param")])
@example(kinds=["int", "Param", "int"], steps=[("pop", 0, 0, "int"), ("remove", 1, 0, "int")])
def test_list_operations_leave_flax_s_items_places_and_state(
    nnx: Any, flax_nnx: Any, kinds: list[str], steps: list[tuple[str, int, int, str]]
) -> None:
    """Drawn List programs (deletes and slices with a positive step among them) leave, after
    each step, flax's items, length, places and state: a place keeps its kind (data moved or
    set into a place that holds a static value is flax's ValueError, raised part way), an
    item moved into the place a delete removed takes its own kind, and a delete leaves the
    last place behind past the List's length, as flax 0.12.12's does."""

    def scenario(nnx: Any) -> Any:
        made = nnx.List([_item(nnx, kind, i) for i, kind in enumerate(kinds)])
        seen = []
        for step in steps:
            _list_step(nnx, made, step)
            places = [
                (path, node) for path, node in nnx.iter_graph(made) if len(path) == 1 and isinstance(path[0], int)
            ]
            seen.append((list(made), len(made), places, nnx.state(made)))
        return seen

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("property")
@pytest.mark.apis("List")
@pytest.mark.documented("api helpers page: List, a Module that implements a mutable sequence")
@given(
    kinds=st.lists(KINDS, min_size=1, max_size=6),
    start=st.integers(-7, 7),
    stop=st.integers(-7, 7),
    step=st.sampled_from([-1, -2, -3]),
)
def test_deleting_a_slice_of_negative_step_removes_the_items_a_python_list_would(
    nnx: Any, kinds: list[str], start: int, stop: int, step: int
) -> None:
    """A List implements a mutable sequence: ``del made[start:stop:step]`` leaves the items
    that ``del`` leaves of a Python list (flax 0.12.12 deletes others where the step is
    negative)."""
    made = nnx.List([_item(nnx, kind, i) for i, kind in enumerate(kinds)])
    before = list(made)
    kept = list(range(len(before)))
    del kept[start:stop:step]
    try:
        del made[start:stop:step]
    except ValueError:  # data moved into a static place, as in flax: the sequence rule is then moot
        return
    assert [_identity(item) for item in made] == [_identity(before[i]) for i in kept], (
        f"del [{start}:{stop}:{step}] of a List of {kinds} leaves {list(made)!r}, a Python list the items at {kept}"
    )


def _identity(item: Any) -> Any:
    """An int by value, any other item by identity."""
    return item if isinstance(item, int) else id(item)


COMPARISONS = {
    "two Lists of the same items": lambda n: n.List([1, 2]) == n.List([1, 2]),
    "two Lists of other items": lambda n: n.List([1, 2]) == n.List([3]),
    "a List and a list": lambda n: n.List([1, 2]) == [1, 2],
    "a List and a Dict": lambda n: n.List([]) == n.Dict(),
    "a List != a List": lambda n: n.List([1]) != n.List([2]),
    "hash of a List": lambda n: hash(n.List([1])),
    "a List among others": lambda n: n.List([jnp.zeros(2)]) in [n.List([1])],
    "two Dicts of the same items": lambda n: n.Dict(a=1, b=n.Param(2)) == n.Dict(a=1, b=n.Param(2)),
    "two Dicts of other items": lambda n: n.Dict(a=1) == n.Dict(a=2),
    "a Dict and a dict": lambda n: n.Dict(a=1) == {"a": 1},
    "a dict and a Dict": lambda n: {"a": 1} == n.Dict(a=1),  # noqa: SIM300 - the dict on the left is the case under test
    "a Dict of arrays and itself": lambda n: (lambda d: d == d)(n.Dict(c=jnp.zeros(2))),
    "two Dicts of arrays": lambda n: n.Dict(c=jnp.zeros(2)) == n.Dict(c=jnp.zeros(2)),
    "hash of a Dict, twice": lambda n: (lambda d: hash(d) == hash(d))(n.Dict(a=1)),
    "a set of two equal Dicts": lambda n: len({n.Dict(a=1), n.Dict(a=1)}),
    "a Dict made with an int key": lambda n: n.Dict({1: 2}),
    "an int key set on a Dict": lambda n: n.Dict().__setitem__(0, n.Param(1)),
}


@pytest.mark.apis("List", "Dict")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(COMPARISONS))
def test_lists_and_dicts_compare_hash_and_key_as_flax_s(nnx: Any, flax_nnx: Any, case: str) -> None:
    """flax 0.12.12: a List equals any List of its exact type whatever its items, and has no
    hash; a Dict compares its items as a Mapping, hashes by identity, and keeps items as
    attributes, so a key that is no string is a TypeError. The docs are silent."""
    assert_same(flax_nnx, nnx, COMPARISONS[case])


@pytest.mark.apis("List", "update", "state")
@pytest.mark.documented(None)
@pytest.mark.parametrize("length", [3, 300], ids=["a short List", "a List of 300 items"])
def test_updating_a_list_from_the_state_of_a_longer_one_appends_the_item_past_its_end_as_flax(
    nnx: Any, flax_nnx: Any, length: int
) -> None:
    """The state of a List one item longer updates a List in place: its items take the
    values, and the one past its end is appended, however long the List."""

    def scenario(nnx: Any) -> Any:
        short = nnx.List([nnx.Param(jnp.full(1, i)) for i in range(length)])
        longer = nnx.List([nnx.Param(jnp.full(1, -i)) for i in range(length + 1)])
        nnx.update(short, nnx.state(longer))
        return len(short), short[0], short[length]

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax updates the List: {outcome.error!r}"
