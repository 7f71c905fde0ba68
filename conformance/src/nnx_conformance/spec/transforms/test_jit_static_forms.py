"""Parity of the forms of ``nnx.jit``'s static arguments with flax.nnx: numbers and names
given together, names as a list, a name that is no string, keyword-only and variadic
parameters, a function without a signature, a number past the positional parameters,
and static arguments beside a tuple of ``in_shardings``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

MODES = gs.MODE_KEYWORDS


def _scaled(x: Any, k: int, *, n: int = 1) -> Any:
    return x * k + n


def _product(*xs: Any) -> Any:
    return xs[0] * xs[1]


def _replicated() -> NamedSharding:
    return NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())


Case = Callable[[Any, dict[str, Any]], Any]
"""Jits a function with some static arguments (in a mode, by ``nnx``) and calls it."""

CASES: dict[str, Case] = {
    "numbers and names together": lambda nnx, mode: nnx.jit(_scaled, static_argnums=1, static_argnames="n", **mode)(
        jnp.ones(2), 2, n=3
    ),
    "names as a list": lambda nnx, mode: nnx.jit(_scaled, static_argnames=["k", "n"], **mode)(jnp.ones(2), k=2, n=3),
    "a name that is no string": lambda nnx, mode: nnx.jit(_scaled, static_argnames=["n", 1], **mode),
    "a number of a variadic parameter": lambda nnx, mode: nnx.jit(_product, static_argnums=1, **mode)(jnp.ones(2), 3),
    "a function without a signature": lambda nnx, mode: nnx.jit(max, static_argnums=(0, 1), **mode)(2, 5),
    "a number past the positional parameters": lambda nnx, mode: nnx.jit(_scaled, static_argnums=2, **mode),
    "a negative number past the positional parameters": lambda nnx, mode: nnx.jit(_scaled, static_argnums=-3, **mode),
    "beside a tuple of in_shardings": lambda nnx, mode: nnx.jit(
        _scaled, in_shardings=(_replicated(),), static_argnums=1, **mode
    )(jnp.ones(2), 2),
    "by name beside a tuple of in_shardings": lambda nnx, mode: nnx.jit(
        _scaled, in_shardings=(_replicated(),), static_argnums=1, static_argnames="n", **mode
    )(jnp.ones(2), 2, n=3),
}


REFUSED: dict[str, tuple[str, ...]] = {
    "a name that is no string": ("argument is not a string",),
    "a number past the positional parameters": ("static_argnums=(2,)", "only accepts 2 positional arguments"),
    "a negative number past the positional parameters": ("static_argnums=(-3,)",),
    "by name beside a tuple of in_shardings": ("does not support kwargs when in_shardings is specified",),
}
"""The cases flax refuses, with what its message names."""


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_static_arguments_in_each_form_act_as_in_flax(nnx: Any, flax_nnx: Any, case: str, mode: str) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: CASES[case](nnx, MODES[mode]), mentions=REFUSED.get(case, ()))
    refused = outcome.error is not None
    assert refused == (case in REFUSED), f"flax {'refuses' if refused else 'runs'} static arguments given as {case}"
