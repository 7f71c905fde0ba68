"""Differential test of what the function a transform returns says of itself: its name,
docstring and module are the transformed function's, and ``__wrapped__`` leads back to it,
as in flax. (flax's ``grad`` and ``value_and_grad`` return a function named after an
internal wrapper of theirs, whose name depends on the graph mode; they are left out.)"""

from __future__ import annotations

from typing import Any

import jax
import pytest
from jax.sharding import PartitionSpec as P

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


def body(x: Any, y: Any = 1) -> Any:
    """The transformed function's own docstring."""
    return x


TRANSFORMS = {
    "jit": lambda nnx: nnx.jit(body),
    "jit_partial": lambda nnx: nnx.jit_partial(body),
    "vmap": lambda nnx: nnx.vmap(body),
    "pmap": lambda nnx: nnx.pmap(body),
    "remat": lambda nnx: nnx.remat(body),
    "scan": lambda nnx: nnx.scan(body),
    "checkify": lambda nnx: nnx.checkify(body),
    "custom_vjp": lambda nnx: nnx.custom_vjp(body),
    "split_rngs": lambda nnx: nnx.split_rngs(splits=2)(body),
    "make_jaxpr": lambda nnx: nnx.make_jaxpr(body, graph_updates=False),  # it refuses graph updates
    "shard_map": lambda nnx: nnx.shard_map(
        body, mesh=jax.sharding.Mesh(jax.devices(), ("devices",)), in_specs=P(), out_specs=P()
    ),
}


def _unwrapped(function: Any) -> Any:
    """Where ``__wrapped__`` leads, to its end."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    return function


@pytest.mark.apis(*TRANSFORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_transformed_function_keeps_the_name_and_docstring_of_its_function_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    def scenario(nnx: Any) -> Any:
        made = TRANSFORMS[transform](nnx)
        return made.__name__, made.__qualname__, made.__doc__, made.__module__, _unwrapped(made) is body

    assert_same(flax_nnx, nnx, scenario)
