"""Fixtures the display tests share."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def not_flax_against_itself(flax_nnx: Any) -> None:
    """Skips a test with flax.nnx under test. flax 0.12.12's tabulate leaves the tabulated Module classes' methods
    wrapped, so that a
    later nnx.capture of them in the same process recurses (the extracting_intermediates guide
    fails after these tests in a one-process run); with flax under test, there is nothing to compare."""
    if flax_nnx.alias is None:
        pytest.skip("flax.nnx under test: its tabulate would leave its Module classes patched for later pages")
