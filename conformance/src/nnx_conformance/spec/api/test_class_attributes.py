"""Differential test of the public classes' class-level values: every public attribute of
a flax.nnx class that is a plain value on the class (a default such as
``Bidirectional.return_carry``, ``PathContains.exact`` or ``Variable.required_metadata``;
methods, properties and slots aside) reads the same on the implementation's class."""

from __future__ import annotations

import inspect
import json
from importlib import resources
from typing import Any

import pytest

from nnx_conformance.surface import EXCLUDED

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented(None)]

CLASSES: list[str] = sorted(
    name
    for name, entry in json.loads(resources.files("nnx_conformance").joinpath("data", "flax_api.json").read_text())[
        "names"
    ].items()
    if entry["kind"] == "class" and name not in EXCLUDED
)

_DESCRIPTORS = (property, classmethod, staticmethod)


def _class_values(cls: type) -> dict[str, Any]:
    """The public attributes of ``cls`` (its own or inherited) that are plain values on the
    class, a class among them by its name."""
    values = {}
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        value = inspect.getattr_static(cls, attr)
        if callable(value) or isinstance(value, _DESCRIPTORS) or inspect.isdatadescriptor(value):
            continue
        values[attr] = value.__name__ if isinstance(value, type) else value
    return values


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.apis(name)) for name in CLASSES])
def test_a_public_class_has_flax_s_class_level_values(nnx: Any, flax_nnx: Any, name: str) -> None:
    got = getattr(nnx, name)
    wanted = _class_values(getattr(flax_nnx.nnx, name))
    found = {attr: inspect.getattr_static(got, attr, "<missing>") for attr in wanted}
    found = {attr: value.__name__ if isinstance(value, type) else value for attr, value in found.items()}
    assert found == wanted, f"nnx.{name}'s class-level values are {found}, flax.nnx's are {wanted}"
