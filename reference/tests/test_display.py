"""``display`` under IPython: each object goes to treescope with the options flax gives it
(automatic array visualizations, exceptions caught). The conformance suite runs outside a
notebook, where both implementations print."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from nnx_reference import visualization


def test_display_hands_each_object_to_treescope_as_flax_does(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []
    fake = types.ModuleType("treescope")
    fake.display = lambda x, **options: calls.append((x, options))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "treescope", fake)
    monkeypatch.setattr(visualization, "USES_TREESCOPE", True)
    visualization.display("a", 2)
    expected = [(x, {"ignore_exceptions": True, "autovisualize": True}) for x in ("a", 2)]
    assert calls == expected, f"expected treescope.display called as {expected}, got {calls}"


def test_display_prints_outside_ipython(capsys: pytest.CaptureFixture[str]) -> None:
    assert not visualization.USES_TREESCOPE, "the tests run outside IPython, where display prints"
    visualization.display("a", 2)
    assert capsys.readouterr().out == "a\n2\n", "expected each object printed on a line of its own"
