"""The suite's runs keep what JAX compiles in JAX's persistent compilation cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from specbuilder import GuidePage, write_spec
from suiteruns import importable, run_suite

COMPILES = "import jax\njax.jit(lambda x: x * 3 + 1)(2.0)"
"""An example that compiles a program that takes JAX far less than a second to compile."""


def _cached(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.rglob("*-cache"))


@pytest.mark.parametrize("chosen", [False, True], ids=["the suite's folder", "JAX_COMPILATION_CACHE_DIR"])
def test_what_a_run_compiles_is_kept_in_the_persistent_cache_for_the_next(
    pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch, chosen: bool
) -> None:
    spec = write_spec(pytester.path, GuidePage("guide:jit", [(COMPILES, None)]))
    importable(monkeypatch, pytester.path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "xdg"))
    folder = pytester.path / "xdg" / "nnx-conformance" / "jax"
    if chosen:
        folder = pytester.path / "chosen"
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(folder))
    run = run_suite(pytester, fake_impl, spec, "-n", "2")
    assert run.report["summary"]["passed"] == 1, "the example runs"
    assert any(name.startswith("jit__lambda") for name in _cached(folder)), (
        "the example's program, quick to compile, is in the cache the run uses"
    )
