"""The ``flax_nnx`` fixture's yardstick: the real flax.nnx, or why parity tests skip."""

from __future__ import annotations

import importlib.machinery
import types

import pytest

from nnx_conformance.impl import FLAX_UNDER_TEST, NO_FLAX, ImportAlias, Implementation, Yardstick


def test_parity_is_trivial_when_flax_nnx_is_the_implementation_under_test() -> None:
    assert Yardstick.load(Implementation("flax.nnx", None), None) == FLAX_UNDER_TEST


def test_parity_needs_flax_installed_beside_the_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("fakennx")
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(lambda cls, *args, **kwargs: None))
    assert Yardstick.load(Implementation("fakennx", fake), ImportAlias(fake)) == NO_FLAX
