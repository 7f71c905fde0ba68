"""Where flax's tree mode crashes, the reference refuses with tree mode's own error:
``with_vars`` on a Module holding one Variable twice (flax 0.12.12 fails with
``AttributeError`` on the array it reaches the second time; the reference says that tree
mode takes no shared references, naming both paths and, as flax's tree mode takes the
model apart as ``split`` does, pointing to ``split``'s graph mode)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import nnx_reference as nnx


class Tied(nnx.Module):
    def __init__(self) -> None:
        self.a = nnx.Param(jnp.arange(2.0))
        self.b = self.a


def test_tree_mode_with_vars_refuses_a_variable_held_twice() -> None:
    refusal = r"(?s)Duplicate Param.*- \.a\n  - \.b.*graph=True to split"
    with nnx.set_graph_mode(False), pytest.raises(ValueError, match=refusal):
        nnx.with_vars(Tied(), mutable=False)
