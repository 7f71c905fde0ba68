"""Graph keywords that flax.nnx refuses in some combination: clone's ``arrays`` copies
the arrays of the Variables it copies, so it needs ``variables=True``."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.kind("error")


@pytest.mark.apis("clone")
def test_clone_refuses_to_copy_arrays_without_copying_variables(nnx: Any) -> None:
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="If arrays is True, variables should be also True"):
        nnx.clone(model, variables=False, arrays=True)
