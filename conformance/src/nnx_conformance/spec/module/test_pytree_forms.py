"""Parity with flax.nnx of the less common forms of Pytree classes and attributes:
``nnx.data``/``nnx.static`` given both a value and field options, or a ``metadata``
mapping; a ``dataclasses.field`` whose ``static`` metadata is no bool, or contradicts the
class annotation; a property with a setter; ``nnx.data`` on an object that is no pytree;
``Object`` asked to be a pytree; ``has_data`` of a structure that repeats an object; the
repr of a ref Variable's array, of Python containers and of a Module met again; string
annotations beside one that does not resolve; and the bookkeeping entry ``iter_graph``
yields."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
import treescope

from nnx_conformance.outputs import DocOutputChecker
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented(None)]

MARKER_CALLS: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "a value and a default": lambda mark: mark(1, default=2),
    "a value and metadata": lambda mark: mark(1, metadata={"doc": "d"}),
    "metadata naming static": lambda mark: mark(metadata={"static": True}),
    "metadata and a default": lambda mark: mark(metadata={"doc": "d"}, default=3),
}


@pytest.mark.apis("data", "static")
@pytest.mark.parametrize("marker", ["data", "static"])
@pytest.mark.parametrize("call", MARKER_CALLS)
def test_data_and_static_take_and_refuse_field_options_as_flax_s(
    nnx: Any, flax_nnx: Any, marker: str, call: str
) -> None:
    """With no value they make a dataclass field that keeps the given metadata and default;
    a value beside field options is a TypeError, a ``static`` metadata key a ValueError."""

    def scenario(nnx: Any) -> Any:
        field = MARKER_CALLS[call](getattr(nnx, marker))
        return field.default, field.metadata.get("doc")

    assert_same(flax_nnx, nnx, scenario, mentions=(f"nnx.{marker}",) if "value and" in call else ())


def _annotated_class(nnx: Any, annotation: Any, field: Any) -> Any:
    namespace = {"__annotations__": {"v": annotation}, "v": field, "__init__": lambda self: None}
    return type("Holder", (nnx.Pytree,), namespace)


CLASS_FIELDS: dict[str, Callable[[Any], Any]] = {
    "a field whose static is a string": lambda nnx: _annotated_class(
        nnx, int, dataclasses.field(default=1, metadata={"static": "yes"})
    ),
    "a field whose static is True": lambda nnx: _annotated_class(
        nnx, int, dataclasses.field(default=1, metadata={"static": True})
    ),
    "nnx.Data annotation with nnx.static()": lambda nnx: _annotated_class(nnx, nnx.Data[int], nnx.static(default=1)),
    "nnx.Static annotation with nnx.data()": lambda nnx: _annotated_class(nnx, nnx.Static[int], nnx.data(default=1)),
    "nnx.Data annotation with nnx.data()": lambda nnx: _annotated_class(nnx, nnx.Data[int], nnx.data(default=1)),
}


@pytest.mark.apis("Pytree", "data", "static", "Data", "Static")
@pytest.mark.parametrize("field", CLASS_FIELDS)
def test_a_class_field_s_static_metadata_is_checked_as_flax_checks_it(nnx: Any, flax_nnx: Any, field: str) -> None:
    """``static`` metadata must be a bool (ValueError naming the attribute), and must not
    contradict a ``Data``/``Static`` annotation of the same attribute (ValueError)."""

    def scenario(nnx: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            holder = CLASS_FIELDS[field](nnx)()
        holder.v = jnp.ones(1)
        return jax.tree.leaves(holder)

    assert_same(flax_nnx, nnx, scenario, mentions=("Holder.v",))


@pytest.mark.apis("Module")
def test_assigning_a_property_with_a_setter_calls_the_setter_as_flax(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        class Scaled(nnx.Module):
            def __init__(self) -> None:
                self.raw = nnx.Param(jnp.ones(2))

            @property
            def scale(self) -> Any:
                return self.raw[...] * 2

            @scale.setter
            def scale(self, value: Any) -> None:
                self.raw[...] = value / 2

        module = Scaled()
        module.scale = jnp.full(2, 6.0)
        return module.scale, module, "scale" in vars(module), jax.tree.leaves(module)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Pytree", "data", "static", "split")
@pytest.mark.parametrize("marker", ["data", "static"])
def test_data_and_static_on_an_object_that_is_no_pytree_store_the_bare_value_as_flax(
    nnx: Any, flax_nnx: Any, marker: str
) -> None:
    def scenario(nnx: Any) -> Any:
        class Holder(nnx.Pytree, pytree=False):
            def __init__(self) -> None:
                self.x = getattr(nnx, marker)(jnp.ones(2))
                self.n = getattr(nnx, marker)(3)

        holder = Holder()
        return holder.x, holder.n, nnx.state(holder), jax.tree.leaves(holder)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Object")
@pytest.mark.parametrize("pytree", [True, False, None], ids=["pytree=True", "pytree=False", "not given"])
def test_an_object_subclass_cannot_be_made_a_pytree_as_in_flax(nnx: Any, flax_nnx: Any, pytree: bool | None) -> None:
    def scenario(nnx: Any) -> Any:
        options = {} if pytree is None else {"pytree": pytree}
        holder = type("Holder", (nnx.Object,), {}, **options)()
        holder.x = jnp.ones(2)
        return jax.tree.leaves(holder)

    assert_same(flax_nnx, nnx, scenario, mentions=("pytree",))


@pytest.mark.apis("has_data")
@pytest.mark.parametrize("shared", ["a list", "an array", "a Param"])
def test_has_data_of_a_structure_that_repeats_an_object_lists_what_flax_lists(
    nnx: Any, flax_nnx: Any, shared: str
) -> None:
    """flax walks a repeated object once; met again it is a leaf, listed if it is data."""

    def scenario(nnx: Any) -> Any:
        item = {"a list": lambda: [jnp.ones(1), 2], "an array": lambda: jnp.ones(2), "a Param": lambda: nnx.Param(1)}
        repeated = item[shared]()
        return nnx.has_data([repeated, {"again": repeated}, 3])

    assert_same(flax_nnx, nnx, scenario)


def _repr(nnx: Any, value: Any) -> str:
    return DocOutputChecker(nnx.__name__).normalize(repr(value))


def _shown(nnx: Any, value: Any) -> str:
    return DocOutputChecker(nnx.__name__).normalize(treescope.render_to_text(value))


def _cyclic(nnx: Any) -> Any:
    class Node(nnx.Module):
        def __init__(self) -> None:
            self.children = nnx.List([])
            self.weight = nnx.Param(jnp.ones(2))

    node = Node()
    node.children.append(node)
    return node


def _containers(nnx: Any) -> Any:
    class Holder(nnx.Module):
        def __init__(self) -> None:
            self.sizes = [1, [2, 3]]
            self.names = {"only"}
            self.pair = ({"k": 1.5}, None)
            self.flags = {True}

    return Holder()


def _ref_params(nnx: Any) -> Any:
    class Refs(nnx.Module):
        def __init__(self) -> None:
            self.big = nnx.Param(jnp.ones(3), ref=True)
            self.one = nnx.Param(1.0, ref=True)
            self.values = nnx.data([jax.new_ref(jnp.ones(2))])

    return Refs()


def _sizeless(nnx: Any) -> Any:
    class Sizeless(nnx.Module):
        def __init__(self) -> None:
            self.note = nnx.Variable("text")
            self.empty = nnx.Param(jnp.ones((0, 2)))
            self.weight = nnx.Param(jnp.ones(2))

    return Sizeless()


REPRS: dict[str, Callable[[Any], Any]] = {
    "a Module holding Variables of no size": _sizeless,
    "a Module holding ref Params and Refs": _ref_params,
    "a Module in a cycle": _cyclic,
    "a Module holding lists, sets, tuples and dicts": _containers,
}


@pytest.mark.apis("Module", "Param", "Dict", "List")
@pytest.mark.parametrize("what", REPRS)
def test_the_repr_of_a_module_is_flax_s(nnx: Any, flax_nnx: Any, what: str) -> None:
    """A ref Variable's array is shown by shape and dtype as flax shows it, a Module met
    again inside itself as flax shows it, and Python containers in flax's notation."""
    assert_same(flax_nnx, nnx, lambda nnx: _repr(nnx, REPRS[what](nnx)))


@pytest.mark.apis("Pytree", "Data", "Static")
@pytest.mark.parametrize("marker", ["nnx.Data[int]", "nnx.Static[int]"])
@pytest.mark.parametrize("value", ["a Python int", "an array"])
def test_a_string_marker_beside_an_annotation_that_does_not_resolve_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, marker: str, value: str
) -> None:
    """When one annotation of the class names nothing, flax reads the others as the strings
    they are: ``nnx.Data[...]`` makes its attribute data, ``nnx.Static[...]`` static, each
    with its DeprecationWarning."""

    def scenario(nnx: Any) -> Any:
        made = {"a Python int": 1, "an array": jnp.ones(1)}[value]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            namespace = {
                "__annotations__": {"v": marker, "w": "NoSuchName[int]"},
                "__init__": lambda self: setattr(self, "v", made),
            }
            holder = type("Holder", (nnx.Pytree,), namespace)()
        warned = [str(w.message).split("\n")[0] for w in caught if issubclass(w.category, DeprecationWarning)]
        return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(holder)], warned

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("iter_graph", "Linear")
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_the_bookkeeping_entries_iter_graph_yields_repr_as_flax_s(nnx: Any, flax_nnx: Any, graph: bool) -> None:
    """``iter_graph`` yields a Module's private ``_pytree__state`` entry too; it prints, and
    treescope renders it, as flax's."""

    def scenario(nnx: Any) -> Any:
        layer = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
        entries = [(path, value) for path, value in nnx.iter_graph(layer, graph=graph) if "_pytree__state" in path]
        return [(path, _repr(nnx, value), _shown(nnx, value)) for path, value in entries]

    assert_same(flax_nnx, nnx, scenario)
