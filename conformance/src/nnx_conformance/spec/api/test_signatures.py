"""Every public name of flax.nnx 0.12.12 exists in the implementation with a compatible
kind and signature.

The expected surface is ``data/flax_api.json``, dumped from the pinned flax with
``tools/api_surface.py``; a test per name (the test id is the name) compares it with the
implementation's object. Names documented on an API reference page take that page as
their area; the others are in the area ``api``.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any

import pytest

from nnx_conformance.surface import EXCLUDED, describe, problems

pytestmark = pytest.mark.kind("signature")

SPEC: dict[str, Any] = json.loads(resources.files("nnx_conformance").joinpath("data", "flax_api.json").read_text())[
    "names"
]


def _cases() -> list[Any]:
    return [
        pytest.param(name, id=name, marks=[pytest.mark.area(entry.get("area", "api")), pytest.mark.apis(name)])
        for name, entry in sorted(SPEC.items())
        if name not in EXCLUDED
    ]


@pytest.mark.parametrize("name", _cases())
def test_the_public_name_exists_with_a_compatible_kind_and_signature(nnx: Any, name: str) -> None:
    getattr(nnx, name)  # a missing name fails here, with the name in the message
    implementation = sys.modules[nnx.__name__]
    found = problems(name, SPEC[name], describe(getattr(implementation, name)))
    assert not found, f"nnx.{name} differs from flax.nnx 0.12.12:\n  " + "\n  ".join(found)


def test_the_exclusions_name_public_names_of_flax() -> None:
    stale = sorted(set(EXCLUDED) - set(SPEC))
    assert not stale, f"excluded names {stale} are not public names of flax.nnx 0.12.12 (data/flax_api.json)"
