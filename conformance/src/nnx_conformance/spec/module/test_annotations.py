"""Parity of the deprecated ``nnx.Data[...]`` and ``nnx.Static[...]`` class annotations
with flax.nnx: which attributes each spelling makes data or static (the annotation
objects, and the strings ``from __future__ import annotations`` leaves in their place),
the ValueError for an array in an attribute annotated static, and the DeprecationWarning
each spelling emits."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.apis("Data", "Static", "Pytree")]

OBJECTS: dict[str, Callable[[Any], Any]] = {
    "nnx.Data[int]": lambda nnx: nnx.Data[int],
    "nnx.Data": lambda nnx: nnx.Data,
    "nnx.Static[int]": lambda nnx: nnx.Static[int],
    "nnx.Static": lambda nnx: nnx.Static,
}
"""Annotations given as objects, by the source that makes them."""

STRINGS = [
    "nnx.Data[int]",
    "Data[int]",
    "Data",
    "nnx.Data",
    "Data [int]",
    "nnx.Static[int]",
    "Static[int]",
    "Static",
    "nnx.Static",
    "Static[jax.Array]",
    "flax.nnx.Data[int]",
    "n.Data[int]",
    "Optional[nnx.Data[int]]",
    "list[Data[int]]",
    "MyData[int]",
    "int",
    " Data[int]",
    "nnx.Data[]",
]
"""Annotations given as strings: the marker names flax resolves (``Data``, ``nnx.Data``,
subscripted or not), names it does not (another module path, a marker inside another
type), plain types, and strings that are no expression."""


def _annotated(nnx: Any, annotation: Any, value: Any) -> Any:
    """The attribute paths that are data in a Pytree whose ``v`` has ``annotation`` and holds
    ``value``, and the first line of each DeprecationWarning that making the class emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = {"__annotations__": {"v": annotation}, "__init__": lambda self: setattr(self, "v", value)}
        holder = type("Holder", (nnx.Pytree,), namespace)()
    leaves = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(holder)]
    warned = [str(w.message).split("\n")[0] for w in caught if issubclass(w.category, DeprecationWarning)]
    return leaves, warned


VALUES = {"a Python int": lambda: 1, "an array": lambda: jnp.ones(1)}


@pytest.mark.documented(None)
@pytest.mark.parametrize("value", sorted(VALUES))
@pytest.mark.parametrize("annotation", sorted(OBJECTS))
def test_a_marker_annotation_makes_its_attribute_data_or_static_as_in_flax(
    nnx: Any, flax_nnx: Any, annotation: str, value: str
) -> None:
    """``nnx.Data`` (subscripted or not) makes the attribute data, ``nnx.Static`` static, so
    an array there is flax's ValueError; each warns that the annotation is deprecated."""
    assert_same(flax_nnx, nnx, lambda n: _annotated(n, OBJECTS[annotation](n), VALUES[value]()))


@pytest.mark.documented(None)
@pytest.mark.parametrize("value", sorted(VALUES))
@pytest.mark.parametrize("annotation", STRINGS)
def test_a_string_annotation_names_a_marker_as_flax_resolves_it(
    nnx: Any, flax_nnx: Any, annotation: str, value: str
) -> None:
    """A string annotation counts as a marker where it is ``Data`` or ``Static``, or those
    names under ``nnx.``, subscripted or not; a string that is no expression is flax's
    SyntaxError."""
    assert_same(flax_nnx, nnx, lambda n: _annotated(n, annotation, VALUES[value]()))
