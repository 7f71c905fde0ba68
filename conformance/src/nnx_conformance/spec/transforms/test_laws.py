"""Laws of the NNX transforms: a stateful function leaves a Module in the same state
whether it runs eagerly or under a transform, and as under the plain ``jax`` transform
over ``split``/``merge`` where the docs give that equivalence.

The functions are drawn programs (``strategies.programs``): in-place Variable updates,
Rngs draws and, where the mode propagates structural changes, sown Intermediates. Every
law runs in graph mode with graph updates and in tree mode (the ``graph`` and
``graph_updates`` arguments of the transforms, given per call, so that the global mode
of the run decides nothing).
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies

pytestmark = [
    pytest.mark.kind("property"),
    pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"]),
    # Module.sow outside nnx.capture is deprecated in flax 0.12 but documented and working.
    pytest.mark.filterwarnings("ignore:Using 'Module.sow\\(\\)' outside:DeprecationWarning"),
]

Observation = dict[tuple[Any, ...], tuple[str, list[Any]]]


def modes(graph: bool) -> dict[str, bool]:
    """A transform's mode arguments: graph mode with graph updates (the release's default), or tree mode."""
    return {"graph": graph, "graph_updates": graph}


def observe(nnx: Any, model: Any) -> Observation:
    """Every Variable of ``nnx.state(model)`` by path: its type name and its values
    (the raw bits of keys, the leaves of a sown tuple)."""
    observed: Observation = {}
    for path, variable in nnx.to_flat_state(nnx.state(model)):
        leaves = jax.tree.leaves(variable.get_value())
        values = [
            jax.random.key_data(leaf).tolist()
            if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)
            else np.asarray(leaf).tolist()
            for leaf in leaves
        ]
        observed[tuple(path)] = (type(variable).__name__, values)
    return observed


def assert_same_state(got: Observation, expected: Observation, context: str) -> None:
    """Same paths, Variable types and integer values; floats equal up to float32 rounding."""
    __tracebackhide__ = True
    assert sorted(got, key=repr) == sorted(expected, key=repr), (
        f"{context}: the state has paths {sorted(got, key=repr)}, expected {sorted(expected, key=repr)}"
    )
    for path, (type_name, values) in expected.items():
        got_type, got_values = got[path]
        assert got_type == type_name, f"{context}: the Variable at {path} is a {got_type}, expected a {type_name}"
        np.testing.assert_allclose(
            np.asarray(got_values, dtype=float),
            np.asarray(values, dtype=float),
            rtol=1e-6,
            err_msg=f"{context}: the Variable at {path} holds {got_values}, expected {values}",
        )


def draw_case(
    nnx: Any, data: st.DataObject, graph: bool, *, structural: bool = False
) -> tuple[Any, strategies.Program]:
    """A model and a program; sows only in graph mode, since tree mode treats Modules as
    plain pytrees and does not propagate structural changes (nnx.jit, ``graph``)."""
    model = data.draw(strategies.stateful_models(nnx), label="model")
    program = data.draw(strategies.programs(structural=structural and graph), label="program")
    return model, program


def run_eagerly(nnx: Any, model: Any, program: strategies.Program, times: int = 1) -> Observation:
    """The state of a deep copy of ``model`` after running ``program`` eagerly ``times`` times."""
    twin = copy.deepcopy(model)
    for _ in range(times):
        program(nnx, twin)
    return observe(nnx, twin)


@pytest.mark.apis("jit")
@given(data=st.data())
def test_jit_leaves_the_module_in_the_state_that_eager_execution_leaves(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model, program = draw_case(nnx, data, graph, structural=True)
    expected = run_eagerly(nnx, model, program)
    nnx.jit(lambda m: program(nnx, m), **modes(graph))(model)
    assert_same_state(observe(nnx, model), expected, f"after nnx.jit(graph={graph}) of {program}")


@pytest.mark.apis("jit", "split", "merge", "update")
@given(data=st.data())
def test_jit_matches_jax_jit_over_split_and_merge(nnx: Any, graph: bool, data: st.DataObject) -> None:
    model, program = draw_case(nnx, data, graph)
    twin = copy.deepcopy(model)
    graphdef, state = nnx.split(twin, graph=graph)

    def pure(state: Any) -> Any:
        inner = nnx.merge(graphdef, state)
        program(nnx, inner)
        return nnx.state(inner, graph=graph)

    nnx.update(twin, jax.jit(pure)(state))
    nnx.jit(lambda m: program(nnx, m), **modes(graph))(model)
    assert_same_state(observe(nnx, model), observe(nnx, twin), f"nnx.jit(graph={graph}) against jax.jit of {program}")


def loss_of(nnx: Any, program: strategies.Program) -> Any:
    """A loss of (params, state) that runs ``program`` first: the update happens in forward.

    The drawn operations keep the final ``w`` affine in the initial one (scaled by the
    product of the Scale factors on ``w``) and ``stat`` independent of ``w``, so the loss
    ``sum(w * stat)`` has the gradient ``factor * stat``, with ``stat`` as eager execution
    leaves it."""

    def loss(params: Any, state: Any) -> Any:
        program(nnx, _Parts(params, state))
        return jnp.sum(params.w[...] * state.stat[...])

    return loss


class _Parts:
    """The two sub-Modules of a stateful model seen as one, for a loss that takes them apart."""

    def __init__(self, params: Any, state: Any) -> None:
        self.params = params
        self.state = state


@pytest.mark.apis("grad", "value_and_grad")
@given(data=st.data())
def test_grad_and_value_and_grad_update_state_in_forward_and_give_the_eager_loss_and_gradient(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model, program = draw_case(nnx, data, graph)
    use_value_and_grad = data.draw(st.booleans(), label="use value_and_grad")
    twin = copy.deepcopy(model)
    expected_value = loss_of(nnx, program)(twin.params, twin.state)
    scales = [op.factor for op in program.operations if isinstance(op, strategies.Scale) and op.target == "params.w"]
    factor = float(np.prod(scales))
    expected_grad = factor * np.asarray(twin.state.stat[...])
    loss = loss_of(nnx, program)
    name = "value_and_grad" if use_value_and_grad else "grad"
    if use_value_and_grad:
        value, grads = nnx.value_and_grad(loss, **modes(graph))(model.params, model.state)
        assert float(value) == pytest.approx(float(expected_value), rel=1e-6), (
            f"nnx.value_and_grad(graph={graph}) of {program} gave the loss {value}, eagerly it is {expected_value}"
        )
    else:
        grads = nnx.grad(loss, **modes(graph))(model.params, model.state)
    assert_same_state(observe(nnx, model), observe(nnx, twin), f"after nnx.{name}(graph={graph}) of {program}")
    np.testing.assert_allclose(
        np.asarray(grads.w[...]),
        expected_grad,
        rtol=1e-6,
        err_msg=f"nnx.{name}(graph={graph}) of {program}: the gradient of w is not {factor} * stat = {expected_grad}",
    )


@pytest.mark.apis("vmap", "StateAxes")
@given(data=st.data())
def test_vmap_with_broadcast_state_updates_the_module_once_as_eager_execution_does(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model, program = draw_case(nnx, data, graph)
    size = data.draw(st.integers(1, 3), label="batch size")
    xs = jnp.arange(size, dtype="float32")
    twin = copy.deepcopy(model)
    program(nnx, twin)
    expected_ys = xs * jnp.sum(twin.params.w[...])
    # StateAxes needs graph updates (vmap docs, graph_updates); in tree mode None broadcasts the whole Module.
    state_axes = nnx.StateAxes({...: None}) if graph else None

    def step(m: Any, x: Any) -> Any:
        program(nnx, m)
        return x * jnp.sum(m.params.w[...])

    ys = nnx.vmap(step, in_axes=(state_axes, 0), **modes(graph))(model, xs)
    assert_same_state(observe(nnx, model), observe(nnx, twin), f"after nnx.vmap(graph={graph}) of {program}")
    np.testing.assert_allclose(
        np.asarray(ys),
        np.asarray(expected_ys),
        rtol=1e-6,
        err_msg=f"nnx.vmap(graph={graph}) of {program} returned {ys}, expected {expected_ys}",
    )


@pytest.mark.apis("scan", "Carry")
@given(data=st.data())
def test_scan_over_a_module_carry_matches_an_eager_loop(nnx: Any, graph: bool, data: st.DataObject) -> None:
    model, program = draw_case(nnx, data, graph)
    length = data.draw(st.integers(1, 3), label="scan length")
    xs = jnp.arange(length, dtype="float32")
    twin = copy.deepcopy(model)
    expected_ys = []
    for x in xs:
        program(nnx, twin)
        expected_ys.append(x * jnp.sum(twin.state.stat[...]))

    def step(m: Any, x: Any) -> tuple[Any, Any]:
        program(nnx, m)
        return m, x * jnp.sum(m.state.stat[...])

    _, ys = nnx.scan(step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **modes(graph))(model, xs)
    assert_same_state(observe(nnx, model), observe(nnx, twin), f"after nnx.scan(graph={graph}) of {program}")
    np.testing.assert_allclose(
        np.asarray(ys),
        np.asarray(expected_ys),
        rtol=1e-6,
        err_msg=f"nnx.scan(graph={graph}) of {program} stacked {ys}, expected {expected_ys}",
    )


@pytest.mark.apis("cond", "switch")
@given(data=st.data())
def test_cond_and_switch_update_the_module_as_the_chosen_branch_does_eagerly(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model = data.draw(strategies.stateful_models(nnx), label="model")
    branches = data.draw(st.lists(strategies.programs(min_size=0), min_size=2, max_size=3), label="branches")
    index = data.draw(st.integers(0, len(branches) - 1), label="chosen branch")
    expected = run_eagerly(nnx, model, branches[index])
    functions = [lambda m, program=program: program(nnx, m) for program in branches]
    if len(branches) == 2 and data.draw(st.booleans(), label="use cond"):
        name = "cond"
        nnx.cond(jnp.asarray(index == 0), functions[0], functions[1], model, **modes(graph))
    else:
        name = "switch"
        nnx.switch(jnp.asarray(index), functions, model, **modes(graph))
    assert_same_state(observe(nnx, model), expected, f"after nnx.{name}(graph={graph}) choosing {branches[index]}")


@pytest.mark.apis("fori_loop", "while_loop")
@given(data=st.data())
def test_fori_loop_and_while_loop_match_an_eager_loop(nnx: Any, graph: bool, data: st.DataObject) -> None:
    model, program = draw_case(nnx, data, graph)
    iterations = data.draw(st.integers(0, 3), label="iterations")
    expected = run_eagerly(nnx, model, program, times=iterations)
    if data.draw(st.booleans(), label="use fori_loop"):
        name = "fori_loop"

        def body(i: Any, m: Any) -> Any:
            program(nnx, m)
            return m

        nnx.fori_loop(0, iterations, body, model, **modes(graph))
    else:
        name = "while_loop"

        def while_body(carry: tuple[Any, Any]) -> tuple[Any, Any]:
            program(nnx, carry[1])
            return carry[0] + 1, carry[1]

        nnx.while_loop(lambda carry: carry[0] < iterations, while_body, (jnp.asarray(0), model), **modes(graph))
    context = f"after {iterations} iterations of nnx.{name}(graph={graph}) of {program}"
    assert_same_state(observe(nnx, model), expected, context)


@pytest.mark.apis("remat")
@given(data=st.data())
def test_remat_leaves_the_module_in_the_state_that_eager_execution_leaves(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model, program = draw_case(nnx, data, graph, structural=True)
    expected = run_eagerly(nnx, model, program)
    nnx.remat(lambda m: program(nnx, m), **modes(graph))(model)
    assert_same_state(observe(nnx, model), expected, f"after nnx.remat(graph={graph}) of {program}")


@pytest.mark.apis("eval_shape")
@given(data=st.data())
def test_eval_shape_leaves_the_module_untouched_and_gives_the_eager_output_shape(
    nnx: Any, graph: bool, data: st.DataObject
) -> None:
    model = data.draw(strategies.stateful_models(nnx), label="model")
    program = data.draw(strategies.programs(structural=True), label="program")
    before = observe(nnx, model)

    def run(m: Any) -> Any:
        program(nnx, m)
        return m.params.w[...] + m.state.stat[...]

    out = nnx.eval_shape(run, model, **modes(graph))
    assert_same_state(observe(nnx, model), before, f"after nnx.eval_shape(graph={graph}) of {program}")
    eager = run(copy.deepcopy(model))
    assert (out.shape, out.dtype) == (eager.shape, eager.dtype), (
        f"nnx.eval_shape(graph={graph}) of {program} gave {out.shape} {out.dtype}, "
        f"where eager execution gives {eager.shape} {eager.dtype}"
    )
