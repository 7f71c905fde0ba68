"""Differential tests of the graph contexts and ``call``: ``split_context``/``merge_context``
(their ``SplitContext`` and ``MergeContext``) carry object identity through a ``jax.jit``
inside an ``update_context``, and ``nnx.call`` applies a method of a split graph node, as
flax does."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph/contexts")]


@pytest.mark.graph_mode("graph")  # update contexts carry graph-mode identity; the function makes a cycle
@pytest.mark.apis("split_context", "merge_context", "SplitContext", "MergeContext", "update_context")
@given(tag=st.sampled_from(["example", "other"]), value=st.integers(-3, 3), cycle=st.booleans(),
       new_param=st.booleans())
def test_split_and_merge_contexts_carry_identity_through_a_jit_as_flax(
    nnx: Any, flax_nnx: Any, tag: str, value: int, cycle: bool, new_param: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Foo(nnx.Module):
            def __init__(self) -> None:
                self.w = nnx.Param(jnp.arange(3.0))

        m1 = Foo()
        w = m1.w
        with nnx.update_context(tag):
            with nnx.split_context(tag) as ctx:
                kinds = [isinstance(ctx, nnx.SplitContext)]
                graphdef, state = ctx.split(m1)

            @jax.jit
            def f(graphdef: Any, state: Any) -> Any:
                with nnx.merge_context(tag, inner=True) as ctx:
                    m2 = ctx.merge(graphdef, state)
                m2.a = value
                m2.w[...] = m2.w[...] * value
                if cycle:
                    m2.ref = m2
                if new_param:
                    m2.b = nnx.Param(jnp.ones(2))
                with nnx.split_context(tag) as ctx:
                    return ctx.split(m2)

            graphdef_out, state_out = f(graphdef, state)
            with nnx.merge_context(tag, inner=False) as ctx:
                kinds.append(isinstance(ctx, nnx.MergeContext))
                m3 = ctx.merge(graphdef_out, state_out)
        return kinds, m3 is m1, m1.w is w, m1, getattr(m1, "ref", None) is m1, nnx.state(m1)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("call")
@given(calls=st.integers(1, 3), seed=st.integers(0, 2**16), through_jit=st.booleans(), nested=st.booleans())
def test_call_applies_a_method_to_a_split_node_and_returns_its_new_state_as_flax(
    nnx: Any, flax_nnx: Any, calls: int, seed: int, through_jit: bool, nested: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class StatefulLinear(nnx.Module):
            def __init__(self, rngs: Any) -> None:
                self.w = nnx.Param(jax.random.uniform(rngs.params(), (3, 2)))
                self.count = nnx.Variable(jnp.array(0, dtype=jnp.uint32))

            def increment(self) -> None:
                self.count[...] += 1

            def __call__(self, x: Any) -> Any:
                self.increment()
                return x @ self.w

        class Holder(nnx.Module):
            def __init__(self, rngs: Any) -> None:
                self.nodes = nnx.Dict(b=StatefulLinear(rngs))

        root = Holder(nnx.Rngs(seed)) if nested else StatefulLinear(nnx.Rngs(seed))
        pair = nnx.split(root)

        def forward(x: Any, pair: Any) -> Any:
            caller = nnx.call(pair)
            return caller.nodes["b"](x) if nested else caller(x)

        step = jax.jit(forward) if through_jit else forward
        outputs = []
        for _ in range(calls):
            y, pair = step(jnp.ones((1, 3)), pair)
            outputs.append(y)
        return outputs, nnx.merge(*pair)

    assert_same(flax_nnx, nnx, scenario)
