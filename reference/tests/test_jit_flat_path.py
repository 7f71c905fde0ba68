"""The flat-leaf path of ``nnx.jit`` (``transforms/_tree_jit.py``): bounded caches, one
trace per structure, and the graphs it must leave to the general path.

Counts, never timings: after many calls the caches hold as many entries as there
were structures (one compiled plan per argument structure, keyed by structure alone),
and the models called are freed once the caller drops them.
"""

from __future__ import annotations

import gc
import weakref

import jax.numpy as jnp
import pytest

import nnx_reference as nnx

CALLS = 10_000

MODES = {"graph mode": dict(graph=True, graph_updates=True), "tree mode": dict(graph=False)}


def _forward(model: nnx.Linear, x: jnp.ndarray) -> jnp.ndarray:
    return model(x)


def _step(model: nnx.Linear, x: jnp.ndarray) -> jnp.ndarray:
    model.kernel[...] = model.kernel[...] + 1.0
    return model(x)


@pytest.mark.parametrize("function", [_forward, _step], ids=["a pure call", "a call that assigns"])
@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_many_calls_of_one_structure_keep_one_plan_and_one_trace(mode: dict, function) -> None:
    jitted = nnx.jit(function, **mode)
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    for i in range(CALLS):
        jitted(model, jnp.full((1, 2), float(i)))
    plans = jitted._tree_jit.plans
    assert len(plans) == 1, f"{CALLS} calls of one structure left {len(plans)} plans, expected 1"
    (plan,) = plans.values()
    assert plan is not None, "a plain call of a Linear was handed to the general path"
    assert plan._cache_size() == 1, f"the plan was traced for {plan._cache_size()} structures, expected 1"
    assert jitted.jitted_fn._cache_size() == 0, "the general path was traced for a call the plan handles"


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_the_caches_hold_no_model_after_the_caller_drops_it(mode: dict) -> None:
    jitted = nnx.jit(_step, **mode)
    refs = []
    for seed in range(20):
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(seed))
        refs += [weakref.ref(model), weakref.ref(model.kernel)]
        jitted(model, jnp.ones((1, 2)))
    del model
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    assert alive == 0, f"{alive} of {len(refs)} models and Variables are still referenced after the calls"
    assert len(jitted._tree_jit.plans) == 1, f"20 models of one structure left {len(jitted._tree_jit.plans)} plans"


def test_a_structure_change_inside_graph_mode_is_traced_once() -> None:
    traces = []

    def grow(model: nnx.Linear) -> None:
        traces.append(1)
        model.extra = nnx.Param(jnp.zeros(1))

    jitted = nnx.jit(grow)
    for _ in range(3):
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        jitted(model)
        assert isinstance(model.extra, nnx.Param), "the attribute added inside nnx.jit did not reach the caller"
    assert len(traces) == 1, f"a function that adds an attribute was traced {len(traces)} times in 3 calls"


def test_a_graph_with_a_cycle_goes_to_the_general_path() -> None:
    class Node(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))

    first, second = Node(), Node()
    first.other, second.other = second, first
    jitted = nnx.jit(lambda node: node.other.w[...] + node.other.other.w[...])
    total = jitted(first)
    assert total.tolist() == [2.0, 2.0], f"a cyclic graph through nnx.jit gave {total}, expected [2.0, 2.0]"
    assert jitted.jitted_fn._cache_size() == 1, "the cyclic graph did not go to the general path"


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_calls_that_alternate_two_structures_keep_both_plans(mode: dict) -> None:
    jitted = nnx.jit(_forward, **mode)
    models = [nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 3, rngs=nnx.Rngs(0))]
    for i in range(10):
        jitted(models[i % 2], jnp.ones((1, 2)))
    plans = jitted._tree_jit.plans
    assert len(plans) == 2, f"calls alternating two structures left {len(plans)} plans, expected 2"
    traced = sum(plan._cache_size() for plan in plans.values())
    assert traced == 2, f"calls alternating two structures were traced {traced} times, expected 2"
