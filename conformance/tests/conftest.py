"""Harness tests: run the suite in-process on fake specs and fake implementations."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import jax  # imported once here, so in-process runs share it
import jax.numpy  # noqa: F401
import pytest

from nnx_conformance.devices import JaxEnvironment

# The suite's JAX set-up (8 CPU devices) before any test starts JAX's backends: the
# in-process runs share this JAX, whichever test happens to start it.
JaxEnvironment().configure(None)

REPO = Path(__file__).resolve().parents[2]
# The harness's helpers (specbuilder, suiteruns) and the repository's tools package.
sys.path[:0] = [str(Path(__file__).parent), str(REPO)]

from specbuilder import write_fake_impl  # noqa: E402

pytest_plugins = ["pytester"]

SUITE_DOCS = "nnx_conformance.spec.test_docs"


@pytest.fixture
def fake_impl(pytester: pytest.Pytester) -> str:
    """The name of a fake implementation importable in the test's runs."""
    write_fake_impl(pytester.path)
    pytester.syspathinsert()
    return "fakennx"


@pytest.fixture
def run_docs(pytester: pytest.Pytester, fake_impl: str) -> Callable[..., pytest.RunResult]:
    """Run the suite's doc tests on ``pytester.path/docs_extracted`` against the fake impl."""

    def run(*args: str, impl: str = fake_impl) -> pytest.RunResult:
        return pytester.runpytest(
            "--pyargs",
            SUITE_DOCS,
            "--impl",
            impl,
            "--spec-dir",
            str(pytester.path / "docs_extracted"),
            "-p",
            "no:cacheprovider",
            "-rA",
            *args,
        )

    return run
