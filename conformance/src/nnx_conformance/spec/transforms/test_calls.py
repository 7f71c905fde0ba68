"""Parity of how the lifted transforms are called with flax.nnx: keyword arguments, ref
Variables returned from eval_shape, Modules from outside a raw ``jax.jit`` (a tracer must
not leak into them), cached_partial's clones, an input returned as grad's aux, and the
errors flax raises for bound methods, malformed scan axes, a loop body that replaces a
Variable, a Variable passed twice and Variables in jit's shardings."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

KEYWORD_CALLS = {
    "vmap": lambda nnx: nnx.vmap(lambda x: x.sum())(x=jnp.ones((2, 3))),
    "grad": lambda nnx: nnx.grad(lambda x: (x**2).sum())(x=jnp.ones((2, 3))),
    "remat": lambda nnx: nnx.remat(lambda x: x.sum())(x=jnp.ones((2, 3))),
    "scan": lambda nnx: nnx.scan(lambda c, x: (c + x.sum(), x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(
        0.0, x=jnp.ones((2, 3))
    ),
}


@pytest.mark.apis("vmap", "grad", "remat", "scan")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", sorted(KEYWORD_CALLS))
def test_a_transformed_function_takes_keyword_arguments(nnx: Any, flax_nnx: Any, transform: str) -> None:
    assert_same(flax_nnx, nnx, KEYWORD_CALLS[transform])


@pytest.mark.apis("split_rngs")
@pytest.mark.documented(None)
def test_a_split_rngs_method_takes_its_rngs_by_keyword(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        class Model(nnx.Module):
            @nnx.split_rngs(splits=2)
            def keys(self, *, rngs: Any) -> Any:
                return rngs.default.key[...]

        rngs = nnx.Rngs(0)
        return Model().keys(rngs=rngs), rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("eval_shape", "Variable")
@pytest.mark.documented(None)
def test_eval_shape_returns_a_ref_variable_created_inside_it(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        out = nnx.eval_shape(lambda: nnx.Param(jnp.ones(2), ref=True))
        return type(out).__name__, out.shape, str(out.dtype)

    assert_same(flax_nnx, nnx, scenario)


LEAKS = {
    "jit": lambda nnx, m, x, updates: nnx.jit(lambda m, x: m(x), graph_updates=updates)(m, x),
    "grad": lambda nnx, m, x, updates: nnx.grad(lambda m, x: m(x).sum(), graph_updates=updates)(m, x),
    "value_and_grad": lambda nnx, m, x, updates: nnx.value_and_grad(lambda m, x: m(x).sum(), graph_updates=updates)(
        m, x
    )[0],
    "remat": lambda nnx, m, x, updates: nnx.remat(lambda m, x: m(x).sum(), graph_updates=updates)(m, x),
}


@pytest.mark.apis("jit", "grad", "value_and_grad", "remat")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph_updates", [True, False], ids=["graph_updates", "no_graph_updates"])
@pytest.mark.parametrize("transform", sorted(LEAKS))
def test_a_module_from_outside_a_raw_jit_is_rejected_instead_of_leaking_a_tracer(
    nnx: Any, flax_nnx: Any, transform: str, graph_updates: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        m = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        y = jax.jit(lambda x: LEAKS[transform](nnx, m, x, graph_updates))(jnp.ones((3, 2)))
        return y, m

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is not None, "flax raises instead of leaving a tracer in the BatchNorm statistics"


BOUND_METHODS = {
    "grad": lambda nnx, f: nnx.grad(f)(jnp.ones((1, 2))),
    "value_and_grad": lambda nnx, f: nnx.value_and_grad(f)(jnp.ones((1, 2))),
    "vmap": lambda nnx, f: nnx.vmap(f)(jnp.ones((3, 1, 2))),
    "pmap": lambda nnx, f: nnx.pmap(f)(jnp.ones((1, 1, 2))),
    "remat": lambda nnx, f: nnx.remat(f)(jnp.ones((1, 2))),
    "scan": lambda nnx, f: nnx.scan(f)(jnp.ones((3, 1, 2))),
    "eval_shape": lambda nnx, f: nnx.eval_shape(f, jnp.ones((1, 2))),
    "checkify": lambda nnx, f: nnx.checkify(f)(jnp.ones((1, 2))),
    "custom_vjp": lambda nnx, f: nnx.custom_vjp(f),
    "shard_map": lambda nnx, f: nnx.shard_map(
        f, mesh=Mesh(np.array(jax.devices()[:1]), ("x",)), in_specs=PartitionSpec(), out_specs=PartitionSpec()
    )(jnp.ones((1, 2))),
    "jit": lambda nnx, f: nnx.jit(f)(jnp.ones((1, 2))),
}


@pytest.mark.apis(*BOUND_METHODS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", sorted(BOUND_METHODS))
def test_a_bound_method_of_a_module_is_rejected_with_value_error(nnx: Any, flax_nnx: Any, transform: str) -> None:
    def scenario(nnx: Any) -> Any:
        return BOUND_METHODS[transform](nnx, nnx.Linear(2, 2, rngs=nnx.Rngs(0)).__call__)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(f"nnx.{transform}", "bound method"))
    assert isinstance(outcome.error, ValueError), f"flax's nnx.{transform} rejects a bound method with ValueError"


SCAN_AXES_MENTION = {
    "out_axes_none": "out_axes",
    "carry_in_only": "Carry",
    "carry_with_two_arguments": "Carry",
    "carry_without_arguments": "Carry",
}
"""What flax's message names for each malformed scan."""

SCAN_AXES = {
    "out_axes_none": lambda nnx: nnx.scan(lambda c, x: (c, x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, None))(
        0.0, jnp.ones(3)
    ),
    "carry_in_only": lambda nnx: nnx.scan(lambda c, x: c + x, in_axes=(nnx.Carry, 0), out_axes=0)(0.0, jnp.ones(3)),
    "carry_with_two_arguments": lambda nnx: nnx.scan(lambda c, x: c, in_axes=nnx.Carry, out_axes=nnx.Carry)(
        0.0, jnp.ones(3)
    ),
    "carry_without_arguments": lambda nnx: nnx.scan(lambda: (), in_axes=nnx.Carry, out_axes=nnx.Carry, length=2)(),
}


@pytest.mark.apis("scan", "Carry")
@pytest.mark.documented(None)
@pytest.mark.parametrize("axes", sorted(SCAN_AXES))
def test_scan_rejects_malformed_axes_with_value_error(nnx: Any, flax_nnx: Any, axes: str) -> None:
    outcome = assert_same(flax_nnx, nnx, SCAN_AXES[axes], mentions=(SCAN_AXES_MENTION[axes],))
    assert isinstance(outcome.error, ValueError), "flax rejects these scan axes with ValueError"


@pytest.mark.apis("while_loop")
@pytest.mark.documented(None)
def test_while_loop_rejects_a_body_that_replaces_a_variable(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        m = gs.classes(nnx).node(v=nnx.Param(jnp.zeros(())))

        def body(m: Any) -> Any:
            m.v = nnx.Param(m.v[...] + 1)
            return m

        return nnx.while_loop(lambda m: m.v[...] < 3, body, m)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("while_loop",))
    assert isinstance(outcome.error, ValueError), "flax rejects a replaced Variable in while_loop with ValueError"


REPLACING_LOOPS = {
    "while_loop": lambda nnx, body, m, mode: nnx.while_loop(lambda m: m.v[...] < 3, body, m, **mode.kwargs()),
    "fori_loop": lambda nnx, body, m, mode: nnx.fori_loop(0, 3, lambda i, m: body(m), m, **mode.kwargs()),
}


@pytest.mark.apis("while_loop", "fori_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("loop", sorted(REPLACING_LOOPS))
@pytest.mark.parametrize(
    "mode",
    [gs.Mode(graph, updates, True) for graph in (True, False) for updates in (True, False)],
    ids=lambda mode: f"graph={mode.graph}-graph_updates={mode.updates}",
)
def test_a_loop_keeps_the_variables_of_its_value_unless_graph_updates_carry_new_ones(
    nnx: Any, flax_nnx: Any, loop: str, mode: gs.Mode
) -> None:
    def scenario(nnx: Any) -> Any:
        m = gs.classes(nnx).node(v=nnx.Param(jnp.zeros(())))

        def body(m: Any) -> Any:
            m.v = nnx.Param(m.v[...] + 1)
            return m

        return REPLACING_LOOPS[loop](nnx, body, m, mode)

    carried = loop == "fori_loop" and mode.graph and mode.updates
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=() if carried else (loop,))
    assert (outcome.error is None) == carried, (
        "flax's fori_loop in graph mode with graph updates carries a replaced Variable; "
        "otherwise a loop rejects it with ValueError"
    )


TWICE = {
    "eval_shape": lambda nnx, p: nnx.eval_shape(lambda a, b: a[...] + b[...], p, p, graph_updates=False),
    "custom_vjp": lambda nnx, p: _custom_vjp_sum(nnx)(p, p),
}


def _custom_vjp_sum(nnx: Any) -> Any:
    f = nnx.custom_vjp(lambda a, b: a[...] + b[...], graph_updates=False)
    f.defvjp(lambda a, b: (f(a, b), None), lambda res, g: (g, g))
    return f


@pytest.mark.apis("eval_shape", "custom_vjp")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", sorted(TWICE))
def test_the_same_variable_twice_without_graph_updates_is_rejected(nnx: Any, flax_nnx: Any, transform: str) -> None:
    outcome = assert_same(
        flax_nnx, nnx, lambda nnx: TWICE[transform](nnx, nnx.Param(jnp.ones(2))), mentions=("Duplicate",)
    )
    assert isinstance(outcome.error, ValueError), "flax rejects a Variable passed twice with ValueError"


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("argument", ["in_shardings", "out_shardings"])
def test_shardings_given_as_a_state_of_variables_are_explained(nnx: Any, flax_nnx: Any, argument: str) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        shardings = jax.tree.map(lambda _: NamedSharding(mesh, PartitionSpec()), nnx.state(m))
        given = {"in_shardings": (shardings,)} if argument == "in_shardings" else {"out_shardings": shardings}
        return nnx.jit(lambda m: nnx.state(m), **given)(m)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(argument, "nnx.jit", "Variable", "bias"))
    assert isinstance(outcome.error, ValueError), f"flax rejects Variables in {argument} with ValueError"


@pytest.mark.apis("scan", "StateAxes")
@pytest.mark.documented("guide:randomness (a broadcast cell's count advances on every scan step in tree mode)")
@pytest.mark.parametrize(
    "mode",
    [gs.Mode(graph, updates, True) for graph in (True, False) for updates in (True, False)],
    ids=lambda mode: f"graph={mode.graph}-graph_updates={mode.updates}",
)
def test_scan_carries_broadcast_state_unless_graph_updates_drop_it(nnx: Any, flax_nnx: Any, mode: gs.Mode) -> None:
    def scenario(nnx: Any) -> Any:
        m = gs.classes(nnx).node(count=nnx.BatchStat(jnp.zeros(())))

        def body(m: Any, carry: Any) -> Any:
            m.count[...] += 1
            return carry, m.count[...]

        out = nnx.scan(body, in_axes=(None, nnx.Carry), out_axes=(nnx.Carry, 0), length=3, **mode.kwargs())(m, 0)
        return out, m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("cached_partial")
@pytest.mark.documented("api graph page: cached_partial example")
def test_cached_partial_updates_the_cached_module(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

        def step(m: Any, x: Any) -> Any:
            m.kernel[...] += 1
            return m(x)

        f = nnx.cached_partial(nnx.jit(step), m)
        return [f(jnp.ones((1, 2))) for _ in range(2)], m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("cached_partial", "jit")
@pytest.mark.documented("api graph page: cached_partial (clones holding the same Variables)")
def test_cached_partial_binds_clones_that_share_the_variables(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        m, other = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 2, rngs=nnx.Rngs(1))
        f = nnx.cached_partial(nnx.jit(lambda m, d: (m, d)), m, {"layer": other, "k": 3})
        first, second = f(), f()
        clone, layer = first[0], first[1]["layer"]
        return first, clone is m, clone is second[0], clone.kernel is m.kernel, layer is other, layer.bias is other.bias

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("cached_partial", "jit")
@pytest.mark.documented(None)
@pytest.mark.graph_mode("graph")  # binding needs graph updates (flax refuses it without); a case sets tree mode itself
@pytest.mark.parametrize("mode", ["graph", "tree"], ids=["called in global graph mode", "called in global tree mode"])
def test_cached_partial_binds_a_module_holding_one_param_twice(nnx: Any, flax_nnx: Any, mode: str) -> None:
    """The bound Module is cloned as a graph: the Param its two attributes hold stays one,
    updated by each call, whichever global mode the calls run under."""

    def scenario(nnx: Any) -> Any:
        model = nnx.Module()
        model.p = nnx.Param(jnp.ones(2))
        model.q = model.p

        @nnx.jit
        def step(m: Any, x: Any) -> Any:
            m.p[...] += x
            return m.q[...].sum()

        bound = nnx.cached_partial(step, model)
        nnx.set_graph_mode(mode == "graph")
        try:
            return bound(jnp.ones(2)), bound(jnp.ones(2)), model.p[...], model.p is model.q
        finally:
            nnx.set_graph_mode(True)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax binds the Module: {outcome.error!r}"


@pytest.mark.apis("cached_partial", "jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("change", ["a new attribute", "a replaced Param"])
@pytest.mark.parametrize("holder", ["the bound module", "a module in a list", "a module in a dict"])
@pytest.mark.parametrize("at_call", [1, 3], ids=["on the first call", "on the third call"])
def test_cached_partial_refuses_a_call_that_changes_the_bound_structure(
    nnx: Any, flax_nnx: Any, change: str, holder: str, at_call: int
) -> None:
    """However deep the change, and after however many calls that left it alone (the call
    that changes it is the first with a new input shape, so the jitted step is retraced)."""

    def scenario(nnx: Any) -> Any:
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        bound = {"the bound module": m, "a module in a list": [m], "a module in a dict": {"m": m}}[holder]

        def step(bound: Any, x: Any) -> Any:
            target = (
                bound if holder == "the bound module" else bound[0] if holder == "a module in a list" else bound["m"]
            )
            if x.shape[0] == 2:
                if change == "a new attribute":
                    target.count = 1
                else:
                    target.kernel = nnx.Param(jnp.zeros((2, 2)))
            return target(jnp.ones(2)) * x.sum()

        f = nnx.cached_partial(nnx.jit(step), bound)
        return [f(jnp.ones(2 if call == at_call else 1)) for call in range(1, at_call + 1)], m

    assert_same(flax_nnx, nnx, scenario, mentions=["cached_partial"])


@pytest.mark.apis("value_and_grad", "grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_an_input_module_returned_as_aux_is_the_module_itself(nnx: Any, flax_nnx: Any, transform: str) -> None:
    def scenario(nnx: Any) -> Any:
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        out = getattr(nnx, transform)(lambda m: (m(jnp.ones(2)).sum(), m), has_aux=True)(m)
        aux = out[1] if transform == "grad" else out[0][1]
        return out, aux is m

    assert_same(flax_nnx, nnx, scenario)


MODES = [gs.Mode(graph, updates, True) for graph in (True, False) for updates in (True, False)]


def _mode_id(mode: gs.Mode) -> str:
    return f"graph={mode.graph}-graph_updates={mode.updates}"


def _loss(x: Any, model: Any, scale: Any = None) -> Any:
    """A loss that also updates the model it gets: its BatchStat from the input, its Param doubled."""
    model.stat[...] = x * 3
    model.w[...] = model.w[...] * 2
    return (model.w[...] * x).sum()


def _stat_model(nnx: Any) -> Any:
    return gs.classes(nnx).node(w=nnx.Param(jnp.ones(2)), stat=nnx.BatchStat(jnp.zeros(2)))


@pytest.mark.apis("grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_grad_called_with_too_few_arguments_raises_as_flax_does(nnx: Any, flax_nnx: Any, mode: gs.Mode) -> None:
    # with graph updates flax binds the arguments to the function's signature before it differentiates
    missing = "missing a required argument: 'model'" if mode.graph and mode.updates else "'model'"
    scenario = lambda nnx: nnx.grad(_loss, **mode.kwargs())(jnp.ones(2))  # noqa: E731
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(missing,))
    assert isinstance(outcome.error, TypeError), "flax raises TypeError when the function misses an argument"


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_grad_runs_a_function_that_updates_a_model_passed_by_keyword(
    nnx: Any, flax_nnx: Any, transform: str, mode: gs.Mode
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _stat_model(nnx)
        out = getattr(nnx, transform)(_loss, **mode.kwargs())(jnp.ones(2), model=model, scale=jnp.ones(1))
        return out, model

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, "flax differentiates the function and keeps the updates of a keyword argument"


GROWING_LOOPS = {
    "while_loop": lambda nnx, body, m, mode: nnx.while_loop(lambda m: m.w[0] < 3, body, m, **mode.kwargs()),
    "fori_loop": lambda nnx, body, m, mode: nnx.fori_loop(0, 3, lambda i, m: body(m), m, **mode.kwargs()),
}
ADDED = {
    "a Param": lambda nnx: nnx.Param(jnp.zeros(2)),
    "an array": lambda nnx: jnp.zeros(2),
    "a static value": lambda nnx: 3,
}


GROWTHS = [
    (mode, loop, added)
    for mode in MODES
    for loop in sorted(GROWING_LOOPS)
    for added in sorted(ADDED)
    # flax's fori_loop with graph updates hands JAX a carry whose structure holds the new
    # array, and JAX fails comparing it ("Cache keys should be comparable"): no rule to follow
    if not (mode.graph and mode.updates and loop == "fori_loop" and added == "an array")
]


@pytest.mark.apis("while_loop", "fori_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize(
    ("mode", "loop", "added"), GROWTHS, ids=[f"{_mode_id(m)}-{loop}-{added}" for m, loop, added in GROWTHS]
)
def test_a_loop_body_that_adds_an_attribute_is_rejected_as_flax_rejects_it(
    nnx: Any, flax_nnx: Any, mode: gs.Mode, loop: str, added: str
) -> None:
    def scenario(nnx: Any) -> Any:
        def body(m: Any) -> Any:
            m.extra = ADDED[added](nnx)
            return m

        return GROWING_LOOPS[loop](nnx, body, _stat_model(nnx), mode)

    if not (mode.graph and mode.updates):
        mention = "pytree structure error"
    elif loop == "fori_loop":  # flax hands the changed structure to jax.lax.fori_loop, a scan here
        mention = "scan body function carry input and carry output must have the same pytree structure"
    else:
        mention = "nnx.while_loop requires body function's input and output to have the same"
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(mention,))
    assert outcome.error is not None, "flax rejects a loop body that changes the structure of the loop value"


@pytest.mark.apis("scan")
@pytest.mark.documented(None)
@pytest.mark.parametrize("by_keyword", [False, True], ids=["positionally", "by keyword"])
@pytest.mark.parametrize("n_axes", [2, 3], ids=["in_axes for the arguments passed", "in_axes for every parameter"])
@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_scan_maps_every_parameter_of_the_function_with_graph_updates(
    nnx: Any, flax_nnx: Any, mode: gs.Mode, n_axes: int, by_keyword: bool
) -> None:
    def step(carry: Any, x: Any, scale: Any = None) -> Any:
        return carry + x.sum(), x

    def scenario(nnx: Any) -> Any:
        in_axes = (nnx.Carry, 0, None)[:n_axes]
        scanned = nnx.scan(step, in_axes=in_axes, out_axes=(nnx.Carry, 0), **mode.kwargs())
        xs = jnp.arange(6.0).reshape(3, 2)
        return scanned(jnp.zeros(()), x=xs) if by_keyword else scanned(jnp.zeros(()), xs)

    # with graph updates flax binds the call to the signature with its defaults: three arguments
    passed = 3 if mode.graph and mode.updates else 2
    if by_keyword and passed == 2:
        mentions: tuple[str, ...] = ("unexpected keyword argument 'x'",)
    else:
        mentions = ("pytree structure error",) if n_axes != passed else ()
    assert_same(flax_nnx, nnx, scenario, mentions=mentions)


@pytest.mark.apis("vmap")
@pytest.mark.documented(None)
@pytest.mark.parametrize("in_axes", [0, (0,), (0, 0), (0, None)], ids=str)
@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_vmap_maps_a_keyword_argument_as_flax_does(nnx: Any, flax_nnx: Any, mode: gs.Mode, in_axes: Any) -> None:
    # with graph updates flax maps it by the axis of the parameter it names; without, jax.vmap maps it along axis 0
    def scenario(nnx: Any) -> Any:
        mapped = nnx.vmap(lambda x, y=None: x + y, in_axes=in_axes, **mode.kwargs())
        return mapped(jnp.ones((3,)), y=jnp.arange(3.0))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's in_shardings and out_shardings, as jax.jit's")
@pytest.mark.parametrize("given", ["out_shardings alone", "in_shardings and out_shardings", "neither"])
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_the_outputs_are_placed_as_out_shardings_asks_as_in_flax(
    nnx: Any, flax_nnx: Any, given: str, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
        rows = NamedSharding(mesh, PartitionSpec("x"))
        options = {
            "out_shardings alone": {"out_shardings": rows},
            "in_shardings and out_shardings": {"in_shardings": (None, rows), "out_shardings": rows},
            "neither": {},
        }[given]
        m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        y = nnx.jit(lambda m, x: m(x), graph=graph, **options)(m, jnp.ones((1, 2)))
        return y, str(y.sharding.spec)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("eval_shape")
@pytest.mark.parametrize(
    "mode",
    [gs.Mode(graph, updates, True) for graph in (True, False) for updates in (True, False)],
    ids=lambda mode: f"graph={mode.graph}-graph_updates={mode.updates}",
)
@pytest.mark.parametrize("returned", ["the changed model", "its output"])
def test_eval_shape_of_a_function_that_changes_its_model_acts_as_flax(
    nnx: Any, flax_nnx: Any, mode: gs.Mode, returned: str
) -> None:
    """The function adds, replaces and updates Variables of its model: the abstract result
    (with the changes, where flax returns the model), or flax's error for returning the
    model's own Variables without graph updates; the model given is left as it was."""

    def scenario(n: Any) -> Any:
        model = n.Linear(2, 3, rngs=n.Rngs(0))

        def change(m: Any) -> Any:
            m.extra = n.Param(jnp.ones(1))
            m.kernel = n.Param(jnp.zeros((2, 3)))
            m.bias[...] += 1
            return m if returned == "the changed model" else m(jnp.ones((1, 2)))

        out = n.eval_shape(change, model, **mode.kwargs())
        return jax.tree.map(
            lambda leaf: (leaf.shape, str(leaf.dtype)), n.state(out) if returned == "the changed model" else out
        ), model

    assert_same(flax_nnx, nnx, scenario)
