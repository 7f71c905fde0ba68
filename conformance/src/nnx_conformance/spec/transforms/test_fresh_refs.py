"""Differential tests of ``ref=True`` Variables made inside a transform and returned.

JAX refuses a traced function that returns a Ref. flax's graph-mode transforms with graph
updates return such a Variable all the same, holding a new Ref of its value, when the call
was given at least one graph object or Variable; without one, in tree mode, or without graph
updates, JAX's error comes through. Drawn here: the layer or Variable made, how it gets its
Ref (``with_vars``/``vars_as``, with or without ``only``, or made so), the transform and its
mode, and what the call is given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]

MADE: dict[str, Callable[[Any], Any]] = {
    "a Linear": lambda nnx: nnx.Linear(2, 3, rngs=nnx.Rngs(1)),
    "a BatchNorm": lambda nnx: nnx.BatchNorm(2, rngs=nnx.Rngs(1)),
    "an Embed": lambda nnx: nnx.Embed(4, 2, rngs=nnx.Rngs(1)),
    "a LayerNorm without bias": lambda nnx: nnx.LayerNorm(3, use_bias=False, rngs=nnx.Rngs(1)),
    "a Param": lambda nnx: nnx.Param(jnp.arange(3.0)),
    "a BatchStat": lambda nnx: nnx.BatchStat(jnp.ones((2, 2))),
    "a Variable in a list": lambda nnx: [nnx.Variable(jnp.arange(2))],
}

REFS: dict[str, Callable[[Any, Any], Any]] = {
    "with_vars(ref=True)": lambda nnx, x: nnx.with_vars(x, ref=True),
    "vars_as(ref=True)": lambda nnx, x: nnx.vars_as(x, ref=True),
    "with_vars(ref=True, only=Param)": lambda nnx, x: nnx.with_vars(x, ref=True, only=nnx.Param),
    "the same object returned twice": lambda nnx, x: (lambda y: (y, y))(nnx.with_vars(x, ref=True)),
}

GIVEN: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "nothing": lambda nnx: (),
    "an Rngs": lambda nnx: (nnx.Rngs(0),),
    "an empty Dict": lambda nnx: (nnx.Dict(),),
    "a Param": lambda nnx: (nnx.Param(jnp.ones(1)),),
    "a ref=True Param": lambda nnx: (nnx.Param(jnp.ones(1), ref=True),),
    "an array": lambda nnx: (jnp.ones(2),),
    "an int": lambda nnx: (3,),
}

TRANSFORMS: dict[str, Callable[..., Any]] = {
    "jit": lambda nnx, f, mode: nnx.jit(f, **mode),
    "remat": lambda nnx, f, mode: nnx.remat(f, **mode),
    "cond": lambda nnx, f, mode: lambda *a: nnx.cond(True, f, f, *a, **mode),
}

MODES = st.sampled_from(
    [
        {},
        {"graph": True, "graph_updates": True},
        {"graph": True, "graph_updates": False},
        {"graph": False},
    ]
)


@pytest.mark.apis("jit", "remat", "cond", "with_vars", "vars_as")
@pytest.mark.documented(None)
@pytest.mark.filterwarnings("ignore:This function is deprecated:DeprecationWarning")  # vars_as
@given(
    made=st.sampled_from(sorted(MADE)),
    refs=st.sampled_from(sorted(REFS)),
    given_=st.sampled_from(sorted(GIVEN)),
    transform=st.sampled_from(sorted(TRANSFORMS)),
    mode=MODES,
)
def test_a_ref_variable_made_inside_a_transform_is_returned_or_refused_as_flax(
    nnx: Any, flax_nnx: Any, made: str, refs: str, given_: str, transform: str, mode: dict[str, bool]
) -> None:
    def scenario(nnx: Any) -> Any:
        def build(*args: Any) -> Any:
            return REFS[refs](nnx, MADE[made](nnx))

        out = TRANSFORMS[transform](nnx, build, mode)(*GIVEN[given_](nnx))
        return out, [type(v.get_raw_value()).__name__ for v in _variables(nnx, out)]

    assert_same(flax_nnx, nnx, scenario)


def _variables(nnx: Any, tree: Any) -> list[Any]:
    return [node for _, node in nnx.iter_graph(tree, graph=True) if isinstance(node, nnx.Variable)]
