"""The ``flax_nnx`` fixture's yardstick: the real flax.nnx, or why parity tests skip."""

from __future__ import annotations

import importlib.machinery
import types

import pytest

from nnx_conformance.impl import NO_FLAX, ImportAlias, Implementation, Yardstick


def test_flax_under_test_is_its_own_yardstick() -> None:
    flax_nnx = types.ModuleType("flax.nnx")
    yardstick = Yardstick.load(Implementation("flax.nnx", flax_nnx), None)
    assert isinstance(yardstick, Yardstick) and yardstick.nnx is flax_nnx, "flax.nnx under test is compared with itself"
    with yardstick.active() as active:
        assert active is flax_nnx, "with no import alias, the yardstick is active as it is"


def test_parity_needs_flax_installed_beside_the_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("fakennx")
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(lambda cls, *args, **kwargs: None))
    assert Yardstick.load(Implementation("fakennx", fake), ImportAlias(fake)) == NO_FLAX
