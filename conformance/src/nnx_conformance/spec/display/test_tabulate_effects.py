"""What ``nnx.tabulate`` leaves behind: nothing. The classes of the Modules it tabulated keep
their own attributes, so a later ``nnx.capture(..., method_outputs=...)`` records what it
recorded before the table was drawn, as the extracting_intermediates guide shows it."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("property")

X = jnp.ones((1, 2))


def _model(nnx: Any) -> Any:
    """A Module of fresh classes (a Linear subclass with a method of its own inside a Top)."""

    class Dense(nnx.Linear):
        def scaled(self, x: Any) -> Any:
            return self(x) * 2

    class Top(nnx.Module):
        def __init__(self) -> None:
            self.dense = Dense(2, 2, rngs=nnx.Rngs(0))

        def __call__(self, x: Any) -> Any:
            return self.dense.scaled(x)

    return Top()


def _captured_paths(nnx: Any, model: Any) -> list[str]:
    _, intermediates = nnx.capture(model, nnx.Intermediate, method_outputs=nnx.Intermediate)(X)
    return sorted(jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(intermediates))


@pytest.mark.apis("tabulate", "capture")
@pytest.mark.documented("guide:extracting_intermediates (method_outputs) and the tabulate docstring")
def test_tabulate_leaves_the_classes_it_tabulated_as_a_later_capture_needs_them(nnx: Any) -> None:
    model = _model(nnx)
    classes = (type(model), type(model.dense))
    before = {cls: set(vars(cls)) for cls in classes}
    recorded = _captured_paths(nnx, model)
    nnx.tabulate(model, X)
    added = {cls.__name__: sorted(set(vars(cls)) - before[cls]) for cls in classes if set(vars(cls)) != before[cls]}
    assert not added, f"tabulate leaves the classes it tabulated as they were; it added {added}"
    try:
        again = _captured_paths(nnx, model)
    except RecursionError as error:
        raise AssertionError(f"a capture after tabulate records as before; it raised {error!r}") from None
    assert again == recorded, f"a capture after tabulate records {recorded}, as before it; got {again}"
