"""Differential tests of the graph contexts and ``call``: ``split_context``/``merge_context``
(their ``SplitContext`` and ``MergeContext``) carry object identity through a ``jax.jit``
inside an ``update_context``, and ``nnx.call`` applies a method of a split graph node, as
flax does. The splits of one ``split_context`` share one index (an object an earlier split
reached is a reference, without state), and so do the merges of one ``merge_context``
(which copy the Variables they are given, and refuse to make one node twice)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

PICKS = ("top", "sub", "top.b", "sub.w")
"""What a drawn sequence of splits may split: a Module, its submodule, or a Variable of either."""

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph/contexts")]


@pytest.mark.graph_mode("graph")  # update contexts carry graph-mode identity; the function makes a cycle
@pytest.mark.apis("split_context", "merge_context", "SplitContext", "MergeContext", "update_context")
@given(
    tag=st.sampled_from(["example", "other"]), value=st.integers(-3, 3), cycle=st.booleans(), new_param=st.booleans()
)
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


def _objects(nnx: Any) -> dict[str, Any]:
    """A Module holding a submodule, and the Variables of both, by the names of PICKS."""

    class Sub(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.arange(3.0))
            self.n = nnx.BatchStat(jnp.zeros(()))

    class Top(nnx.Module):
        def __init__(self) -> None:
            self.sub = Sub()
            self.b = nnx.Param(jnp.ones(2))

    top = Top()
    return {"top": top, "sub": top.sub, "top.b": top.b, "sub.w": top.sub.w}


@pytest.mark.graph_mode("graph")  # the contexts split and merge in graph mode
@pytest.mark.apis("split_context", "merge_context", "SplitContext", "MergeContext")
@given(picks=st.lists(st.sampled_from(PICKS), min_size=1, max_size=4), filtered=st.booleans())
def test_the_splits_of_one_split_context_share_an_index_and_so_do_its_merges_as_flax(
    nnx: Any, flax_nnx: Any, picks: list[str], filtered: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        objects = _objects(nnx)
        filters = (nnx.Param, ...) if filtered else ()
        with nnx.split_context() as ctx:
            splits = [ctx.split(objects[name], *filters) for name in picks]
        with nnx.merge_context() as ctx:
            merged = [ctx.merge(*split) for split in splits]
        return [split[1:] for split in splits], merged, objects

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.graph_mode("graph")  # update contexts carry graph-mode identity
@pytest.mark.apis("split_context", "merge_context", "update_context")
@given(data=st.data(), value=st.integers(-3, 3))
def test_several_splits_and_merges_of_a_round_trip_through_a_jit_update_the_outer_objects_as_flax(
    nnx: Any, flax_nnx: Any, data: st.DataObject, value: int
) -> None:
    picks = data.draw(st.lists(st.sampled_from(PICKS), min_size=1, max_size=3), label="outer splits")
    order = data.draw(st.permutations(range(len(picks))), label="order of the inner splits")

    def scenario(nnx: Any) -> Any:
        objects = _objects(nnx)
        with nnx.update_context("round-trip"):
            with nnx.split_context("round-trip") as ctx:
                splits = [ctx.split(objects[name]) for name in picks]

            @jax.jit
            def f(splits: list[Any]) -> list[Any]:
                with nnx.merge_context("round-trip", inner=True) as ctx:
                    inner = [ctx.merge(*split) for split in splits]
                first = inner[0]
                if isinstance(first, nnx.Module):
                    first.a = value
                    first.c = nnx.Param(jnp.full(2, value, dtype=jnp.float32))
                else:
                    first[...] = first[...] * value
                with nnx.split_context("round-trip") as ctx:
                    return [ctx.split(inner[i]) for i in order]

            out = f(splits)
            with nnx.merge_context("round-trip", inner=False) as ctx:
                merged = [ctx.merge(*split) for split in out]
        same = [merged[k] is objects[picks[i]] for k, i in enumerate(order)]
        return same, [split[1:] for split in out], merged, objects

    assert_same(flax_nnx, nnx, scenario)


def _split_twice_merged_once(nnx: Any) -> Any:
    top = _objects(nnx)["top"]
    first, second = nnx.split(top), nnx.split(top)
    with nnx.merge_context() as ctx:
        return ctx.merge(*first), ctx.merge(*second)


def _split_under_a_tag_without_its_context(nnx: Any) -> Any:
    with nnx.split_context("no-such-tag") as ctx:
        return ctx.split(_objects(nnx)["top"])


def _merge_under_a_tag_without_its_context(nnx: Any) -> Any:
    split = nnx.split(_objects(nnx)["top"])
    with nnx.merge_context("no-such-tag", inner=True) as ctx:
        return ctx.merge(*split)


def _merge_under_a_tag_without_inner(nnx: Any) -> Any:
    split = nnx.split(_objects(nnx)["top"])
    with nnx.update_context("tag"), nnx.merge_context("tag") as ctx:
        return ctx.merge(*split)


def _split_with_filters_that_leave_a_remainder(nnx: Any) -> Any:
    with nnx.split_context() as ctx:
        return ctx.split(nnx.BatchNorm(2, rngs=nnx.Rngs(0)), nnx.Param)


MISUSES = {
    "a split whose filters leave Variables out": (_split_with_filters_that_leave_a_remainder, "Non-exhaustive"),
    "a node merged twice in one merge_context": (_split_twice_merged_once, "already used"),
    "split_context under a tag without its update_context": (_split_under_a_tag_without_its_context, "no-such-tag"),
    "merge_context under a tag without its update_context": (_merge_under_a_tag_without_its_context, "no-such-tag"),
    "merge_context under a tag without inner": (_merge_under_a_tag_without_inner, "inner_merge"),
}


@pytest.mark.graph_mode("graph")
@pytest.mark.apis("split_context", "merge_context", "update_context")
@pytest.mark.parametrize("misuse", sorted(MISUSES))
def test_a_misused_split_or_merge_context_raises_flax_error(nnx: Any, flax_nnx: Any, misuse: str) -> None:
    scenario, mention = MISUSES[misuse]
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mention,))
    assert outcome.error is not None, f"{misuse}: flax.nnx raises"


ROUND_TRIPS = {
    "split, merge inside, merge back": ("split", "inner merge", "outer merge"),
    "split, merge inside, split inside, merge back": ("split", "inner merge", "inner split", "outer merge"),
}
"""The steps of an update context's round trip, before one more split of the inner object."""


@pytest.mark.graph_mode("graph")  # update contexts carry graph-mode identity
@pytest.mark.apis("split_context", "merge_context", "update_context", "GraphDef")
@pytest.mark.parametrize("steps", sorted(ROUND_TRIPS))
def test_a_split_after_a_round_trip_records_the_inner_objects_as_flax(nnx: Any, flax_nnx: Any, steps: str) -> None:
    """A split under the same update context after a round trip: whether its GraphDef equals
    a plain split's (flax's records the outer index an earlier inner merge left), and what a
    merge of it back gives."""

    def scenario(n: Any) -> Any:
        model = n.Linear(2, 3, rngs=n.Rngs(0))
        inner = None
        with n.update_context("round trip"):
            for step in ROUND_TRIPS[steps]:
                if step == "split":
                    with n.split_context("round trip") as ctx:
                        graphdef, state = ctx.split(model)
                elif step == "inner split":
                    with n.split_context("round trip") as ctx:
                        graphdef, state = ctx.split(inner)
                else:
                    with n.merge_context("round trip", step == "inner merge") as ctx:
                        merged = ctx.merge(graphdef, state)
                    inner = merged if step == "inner merge" else inner
            with n.split_context("round trip") as ctx:
                again, again_state = ctx.split(inner)
        plain = n.split(inner)[0]
        return again == plain, hash(again) == hash(plain), again_state, n.merge(again, again_state)

    assert_same(flax_nnx, nnx, scenario)


def _exit_without_enter(nnx: Any) -> Any:
    return nnx.update_context("never entered").__exit__(None, None, None)


def _exit_twice(nnx: Any) -> Any:
    manager = nnx.update_context("entered once")
    with manager:
        pass
    return manager.__exit__(None, None, None)


EXITS = {
    "an update_context never entered": (_exit_without_enter, "never entered"),
    "an update_context exited twice": (_exit_twice, "entered once"),
}
"""Exits of an update_context with no context of its tag left, and the tag the error names."""


@pytest.mark.apis("update_context")
@pytest.mark.parametrize("misuse", sorted(EXITS))
def test_exiting_an_update_context_with_no_context_of_its_tag_raises_flax_error(
    nnx: Any, flax_nnx: Any, misuse: str
) -> None:
    scenario, tag = EXITS[misuse]
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("No update context found", tag))
    assert outcome.error is not None, f"exiting {misuse}: flax.nnx raises"
