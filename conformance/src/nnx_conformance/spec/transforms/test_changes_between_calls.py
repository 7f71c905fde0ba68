"""Parity with flax.nnx of a jitted function called again after its Module changed in a
way that bypasses ``__setattr__`` (``object.__setattr__``, ``vars(m)``, ``__setstate__``,
...) or after a call that traced anew: whatever an implementation caches between calls,
each call computes with the Module as it is then, as flax's does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _pair(nnx: Any) -> Any:
    """A Module with two Params, ``w`` and ``b``."""

    class Pair(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(3))
            self.b = nnx.Param(jnp.ones(3))

    return Pair()


def _total(nnx: Any) -> Callable[[Any], Any]:
    """A function of every attribute the Module holds: weighted by name, Variables scaled by
    their ``scale`` metadata, plain arrays counted ten times."""

    def total(m: Any) -> Any:
        out = jnp.zeros(())
        for name, value in sorted(vars(m).items()):
            if isinstance(value, nnx.Variable):
                weight = 2.0 if name == "w" else 1.0
                out = out + jnp.sum(value[...]) * weight * value.get_metadata().get("scale", 1.0)
            elif isinstance(value, jax.Array):
                out = out + jnp.sum(value) * 10
        return out

    return total


BYPASSES: dict[str, Callable[[Any, Any], None]] = {
    "object.__setattr__ of a Param": lambda n, m: object.__setattr__(m, "w", n.Param(jnp.full(3, 5.0))),
    "vars(m)[name] = a Param": lambda n, m: vars(m).__setitem__("w", n.Param(jnp.full(3, 5.0))),
    "vars(m)[name] = a plain array": lambda n, m: vars(m).__setitem__("a", jnp.ones(2)),
    "object.__delattr__": lambda n, m: object.__delattr__(m, "b"),
    "vars(m).pop": lambda n, m: vars(m).pop("b"),
    "__setstate__ in place": lambda n, m: m.__setstate__({**m.__getstate__(), "w": n.Param(jnp.full(3, 3.0))}),
    "a Variable's metadata mapping updated in place": lambda n, m: m.w._var_metadata.update(scale=4.0),
}


@pytest.mark.apis("jit", "Module")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("bypass", sorted(BYPASSES))
def test_a_jitted_function_sees_a_change_made_without_setattr(
    nnx: Any, flax_nnx: Any, bypass: str, graph: bool
) -> None:
    """Called three times on one Module, then twice after the Module changed behind its
    ``__setattr__``: the last calls compute with the Module as it is then."""

    def scenario(n: Any) -> Any:
        model = _pair(n)
        jitted = n.jit(_total(n), graph=graph)
        before = [jitted(model) for _ in range(3)]
        BYPASSES[bypass](n, model)
        return before, [jitted(model) for _ in range(2)]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit", "Module", "Param")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_function_that_adds_an_attribute_for_some_shapes_runs_after_cached_calls(
    nnx: Any, flax_nnx: Any, graph: bool
) -> None:
    """A function that adds a Param to its Module only for inputs of length 2, called three
    times with length 1, then three times with length 2: every call runs as in flax."""

    def scenario(n: Any) -> Any:
        model = n.Dict(w=n.Param(jnp.ones(3)))

        @n.jit(graph=graph, graph_updates=graph)
        def forward(m: Any, x: Any) -> Any:
            if x.shape[0] == 2:
                m.extra = n.Param(jnp.zeros(2))
            return jnp.sum(m.w[...]) * x

        outputs = [forward(model, jnp.ones(size)) for size in (1, 1, 1, 2, 2, 2)]
        return outputs, sorted(k for k in vars(model) if not k.startswith("_"))

    assert_same(flax_nnx, nnx, scenario)
