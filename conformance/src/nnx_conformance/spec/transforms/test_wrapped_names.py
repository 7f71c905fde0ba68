"""Differential test of what the function a transform returns says of itself: its name,
docstring and module are the transformed function's, and ``__wrapped__`` leads back to it,
as in flax. flax's ``grad`` and ``value_and_grad`` are the exception: their function is
named after a wrapper of theirs, whose name depends on the graph mode, and keeps nothing
of the function's."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import pytest
from jax.sharding import PartitionSpec as P

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


def body(x: Any, y: Any = 1) -> Any:
    """The transformed function's own docstring."""
    return x


TRANSFORMS = {
    "jit": lambda nnx: nnx.jit(body),
    "jit_partial": lambda nnx: nnx.jit_partial(body, graph=False),  # it refuses graph updates
    "vmap": lambda nnx: nnx.vmap(body),
    "pmap": lambda nnx: nnx.pmap(body),
    "remat": lambda nnx: nnx.remat(body),
    "scan": lambda nnx: nnx.scan(body),
    "checkify": lambda nnx: nnx.checkify(body),
    "custom_vjp": lambda nnx: nnx.custom_vjp(body),
    "split_rngs": lambda nnx: nnx.split_rngs(splits=2)(body),
    "make_jaxpr": lambda nnx: nnx.make_jaxpr(body, graph_updates=False),  # it refuses graph updates
    "transform_metadata": lambda nnx: nnx.transform_metadata(partition="p")(body),
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


MODES = {
    "graph mode": {},
    "tree mode": {"graph": False},
    "graph mode without graph updates": {"graph": True, "graph_updates": False},
}


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("form", ["called", "decorator"])
def test_grad_s_function_is_named_after_the_wrapper_of_its_mode_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str, form: str
) -> None:
    """Its name and qualified name, no docstring, a signature of ``*args, **kwargs`` and no
    way back to the function."""

    def scenario(nnx: Any) -> Any:
        make = getattr(nnx, transform)
        made = make(body, **MODES[mode]) if form == "called" else make(**MODES[mode])(body)
        parameters = [(p.name, p.kind.name) for p in inspect.signature(made).parameters.values()]
        return made.__name__, made.__qualname__, made.__doc__, parameters, _unwrapped(made) is body

    assert_same(flax_nnx, nnx, scenario)
