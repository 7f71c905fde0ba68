"""Parity with flax.nnx of state held in plain ``jax.Array`` attributes (no Variables): a
jitted function that rebinds one keeps the new array in graph mode with graph updates.
(An ``Optimizer`` over such attributes: ``training/test_plain_array_attributes.py``.)"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

JIT_OPTIONS: dict[str, dict[str, Any]] = {
    "graph updates": {},
    "graph updates and donation": {"donate_argnums": 0},
    "graph mode without graph updates": {"graph_updates": False},
    "tree mode": {"graph": False},
}


def _counter(nnx: Any) -> Any:
    """A Module whose state is a plain array attribute ``count`` and a Param ``w``."""

    class Counter(nnx.Module):
        def __init__(self) -> None:
            self.count = jnp.array(0)
            self.w = nnx.Param(jnp.ones(2))

    return Counter()


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("options", sorted(JIT_OPTIONS))
def test_a_jitted_function_rebinding_a_plain_array_attribute_leaves_what_flax_leaves(
    nnx: Any, flax_nnx: Any, options: str
) -> None:
    """``m.count = m.count + 1`` inside: graph updates keep the new array; without them the
    attribute is left as it was, as in flax."""

    def scenario(nnx: Any) -> Any:
        model = _counter(nnx)

        @nnx.jit(**JIT_OPTIONS[options])
        def step(m: Any) -> Any:
            m.count = m.count + 1
            return m.count * m.w[...]

        outputs = [step(model) for _ in range(3)]
        return outputs, model.count

    assert_same(flax_nnx, nnx, scenario)
