"""Parity of the ahead-of-time forms of ``nnx.jit`` and ``nnx.jit_partial`` with flax.nnx:
``trace``, ``lower`` and ``compile`` give stages whose compiled form is called with the
user's arguments and propagates their updates, ``eval_shape`` gives the output's shapes
without updating them, and a jitted function stored on a class binds as a method, in
every mode (graph mode with and without graph updates, tree mode)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = pytest.mark.kind("differential")

MODES = gs.MODE_KEYWORDS
PARTIAL_MODES = gs.NO_UPDATES_MODE_KEYWORDS
"""jit_partial refuses graph updates."""


def _model(nnx: Any) -> Any:
    """A Module with a parameter and a counter that :func:`_step` increments."""
    return nnx.Dict(w=nnx.Param(jnp.arange(3.0)), count=nnx.BatchStat(jnp.array(0)))


def _step(model: Any, x: Any) -> Any:
    model["count"][...] += 1
    return model["w"][...] * x


Staging = Callable[[Any, Any, dict[str, bool]], tuple[Any, tuple[Any, ...]]]
"""Makes the jitted ``_step`` (of ``nnx``, for a Module, in a mode) and the arguments to
trace, lower and call it with."""

STAGINGS: dict[str, Staging] = {
    "jit": lambda nnx, model, mode: (nnx.jit(_step, **mode), (model, jnp.ones(3))),
    "jit_partial": lambda nnx, model, mode: (nnx.jit_partial(_step, model, **mode), (jnp.ones(3),)),
}
CASES = [(name, mode) for name in STAGINGS for mode in (MODES if name == "jit" else PARTIAL_MODES)]


def _shape(tree: Any) -> Any:
    """Each leaf of an abstract output as its shape and dtype name."""
    return jax.tree.map(lambda s: (tuple(s.shape), str(s.dtype)), tree)


@pytest.mark.apis("jit", "jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("route", ["lower", "trace then lower"])
@pytest.mark.parametrize(("transform", "mode"), CASES)
def test_a_compiled_stage_runs_on_the_arguments_and_updates_them_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str, route: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        jitted, args = STAGINGS[transform](nnx, model, MODES[mode])
        lowered = jitted.lower(*args) if route == "lower" else jitted.trace(*args).lower()
        compiled = lowered.compile()
        return [compiled(*args) for _ in range(2)], model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit", "jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize(("transform", "mode"), CASES)
def test_eval_shape_gives_the_output_shapes_and_updates_nothing_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        jitted, args = STAGINGS[transform](nnx, model, MODES[mode])
        return _shape(jitted.eval_shape(*args)), model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_eval_shape_of_a_function_creating_a_module_gives_its_abstract_state_as_in_flax(
    nnx: Any, flax_nnx: Any, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        create = nnx.jit(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)), **MODES[mode])
        return _shape(nnx.to_pure_dict(nnx.state(create.eval_shape())))

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


def _stage_facts(stage: Any) -> dict[str, Any]:
    """What every stage tells of the pure function's inputs, in terms that do not depend on
    how an implementation lays its pure function's arguments out."""
    return {
        "in_tree": type(stage.in_tree).__name__,
        "in_avals": sorted(_shape(jax.tree.leaves(stage.in_avals))),
        "donated buffers": len(stage.donate_argnums),
    }


def _all_shapes(tree: Any) -> bool:
    return all(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree.leaves(tree))


def _all_shardings(tree: Any) -> bool:
    return all(isinstance(leaf, jax.sharding.Sharding) for leaf in jax.tree.leaves(tree))


@pytest.mark.apis("jit", "jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize(("transform", "mode"), CASES)
def test_the_stages_describe_the_compiled_computation_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        jitted, args = STAGINGS[transform](nnx, model, MODES[mode])
        traced = jitted.trace(*args)
        lowered = jitted.lower(*args)
        compiled = lowered.compile()
        return {
            "traced": _stage_facts(traced),
            "traced out_info holds shapes": _all_shapes(traced.out_info),
            "lowered": _stage_facts(lowered),
            "lowered text names the function": "_step" in lowered.as_text(),
            "lowered text in HLO": lowered.as_text(dialect="hlo").startswith("HloModule"),
            "lowered compiler IR": lowered.compiler_ir() is not None,
            "lowered cost analysis": type(lowered.cost_analysis()).__name__,
            "lowered args_info leaves": len(jax.tree.leaves(lowered.args_info)),
            "lowered out_tree leaves": lowered.out_tree.num_leaves > 0,
            "compiled": _stage_facts(compiled),
            "compiled text names the function": "_step" in compiled.as_text(),
            "compiled cost analysis": type(compiled.cost_analysis()).__name__,
            "compiled memory analysis": compiled.memory_analysis() is not None,
            "compiled runtime executable": compiled.runtime_executable() is not None,
            "compiled out_tree leaves": compiled.out_tree.num_leaves > 0,
            "input shardings": _all_shardings(compiled.input_shardings),
            "output shardings": _all_shardings(compiled.output_shardings),
            "input layouts": len(jax.tree.leaves(compiled.input_layouts)) > 0,
            "model untouched": model,
        }

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_a_donated_argument_is_one_donated_buffer_of_the_lowered_function_as_in_flax(
    nnx: Any, flax_nnx: Any, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        lowered = nnx.jit(_step, donate_argnums=1, **MODES[mode]).lower(model, jnp.ones(3))
        return len(lowered.donate_argnums), model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES)
def test_a_jitted_function_stored_on_a_class_binds_as_a_method_as_in_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        class Counter(nnx.Module):
            def __init__(self) -> None:
                self.count = nnx.BatchStat(jnp.array(0))

            @nnx.jit(**MODES[mode])
            def bump(self, by: Any) -> Any:
                self.count[...] += by
                return self.count[...]

        counter = Counter()
        return counter.bump(2), Counter.bump(counter, 3), counter

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", PARTIAL_MODES)
def test_a_jit_partial_stored_on_a_class_passes_the_instance_as_a_runtime_argument_as_in_flax(
    nnx: Any, flax_nnx: Any, mode: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)

        class Holder(nnx.Pytree):
            step = nnx.jit_partial(lambda model, holder, x: _step(model, x) * holder.scale, model, **MODES[mode])
            scale = 2.0

        unbound = Holder.step
        return Holder().step(jnp.ones(3)), unbound is Holder.__dict__["step"], model

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", ["call", "trace", "eval_shape"])
@pytest.mark.parametrize("mode", PARTIAL_MODES)
def test_jit_partial_refuses_variables_in_the_runtime_arguments_as_flax(
    nnx: Any, flax_nnx: Any, mode: str, call: str
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx)
        jitted = nnx.jit_partial(_step, model, **MODES[mode])
        run = jitted if call == "call" else getattr(jitted, call)
        return run(nnx.Param(jnp.ones(3)))

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("Found Variable in non-partial arguments",))
    assert outcome.error is not None, "flax's jit_partial refuses a Variable among the runtime arguments"


@pytest.mark.apis("jit_partial", "StateSharding")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", PARTIAL_MODES)
def test_jit_partial_refuses_a_state_sharding_in_out_shardings_as_flax(nnx: Any, flax_nnx: Any, mode: str) -> None:
    def scenario(nnx: Any) -> Any:
        return nnx.jit_partial(_step, _model(nnx), out_shardings=nnx.StateSharding({...: None}), **MODES[mode])

    outcome = assert_same(
        flax_nnx, nnx, scenario, mentions=("`out_shardings` cannot contain `StateSharding` objects", "jit_partial")
    )
    assert outcome.error is not None, "flax's jit_partial refuses a StateSharding in out_shardings"
