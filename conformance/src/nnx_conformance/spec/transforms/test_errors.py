"""Error conditions of the NNX transforms: sharing and aliasing in tree mode, prefix
objects without graph updates, inconsistent prefixes, trace levels, loop structure."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec

from nnx_conformance.testing.assertions import assert_same, raises_named

pytestmark = pytest.mark.kind("error")


def _pair(nnx: Any, a: Any, b: Any) -> Any:
    class Pair(nnx.Module):
        def __init__(self, a: Any, b: Any):
            self.a = a
            self.b = b

    return Pair(a, b)


def _single(nnx: Any) -> Any:
    class Single(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.array(1.0))

    return Single()


@pytest.mark.apis("jit")
def test_tree_mode_jit_rejects_a_variable_shared_by_two_attributes(nnx: Any) -> None:
    p = nnx.Param(jnp.array(1.0))
    model = _pair(nnx, p, p)
    f = nnx.jit(lambda m, x: m.a * x + m.b, graph=False)
    with pytest.raises(ValueError, match=r"(?s)Duplicate Param.*\.args\[0\]\.a.*\.args\[0\]\.b"):
        f(model, jnp.array(1.0))


@pytest.mark.apis("vmap")
def test_tree_mode_vmap_rejects_the_same_variable_passed_twice(nnx: Any) -> None:
    p = nnx.Param(jnp.arange(3.0))
    with pytest.raises(ValueError, match=r"nnx.vmap with graph_updates=False does not support Variable aliasing"):
        nnx.vmap(lambda a, b: a[...] * b[...], graph=False)(p, p)


@pytest.mark.apis("jit")
@pytest.mark.parametrize("graph", [False, True], ids=["tree-mode", "graph-mode"])
def test_jit_without_graph_updates_rejects_returning_an_input_variable(nnx: Any, graph: bool) -> None:
    model = _single(nnx)
    f = nnx.jit(lambda m: m, graph=graph, graph_updates=False)
    with pytest.raises(ValueError, match=r"nnx.jit with graph_updates=False does not support Variable aliasing"):
        f(model)


@pytest.mark.apis("grad", "DiffState")
def test_grad_rejects_diffstate_in_tree_mode(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"`argnums` cannot contain `DiffState` objects when `graph=False`"):
        grad_fn = nnx.grad(lambda m: m.a[...], argnums=nnx.DiffState(0, nnx.Param), graph=False)
        grad_fn(_single(nnx))


@pytest.mark.apis("custom_vjp", "DiffState")
def test_custom_vjp_rejects_diffstate_in_tree_mode(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"`nondiff_argnums` cannot contain `DiffState` objects"):
        f = nnx.custom_vjp(lambda m: m.a * 2, nondiff_argnums=(nnx.DiffState(0, ...),), graph=False)
        f(_single(nnx))


@pytest.mark.apis("vmap", "StateAxes")
def test_vmap_rejects_stateaxes_in_in_axes_in_tree_mode(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"`in_axes` cannot contain `StateAxes` objects"):
        f = nnx.vmap(lambda m: m.a[...], in_axes=(nnx.StateAxes({...: 0}),), graph=False)
        f(_single(nnx))


@pytest.mark.apis("vmap", "StateAxes")
def test_vmap_rejects_stateaxes_in_out_axes_without_graph_updates(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"`out_axes` cannot contain `StateAxes` objects"):
        f = nnx.vmap(lambda m: m.a[...], in_axes=0, out_axes=nnx.StateAxes({...: 0}), graph=True, graph_updates=False)
        f(_single(nnx))


@pytest.mark.apis("shard_map", "StateSharding")
def test_shard_map_rejects_statesharding_in_tree_mode(nnx: Any) -> None:
    mesh = jax.sharding.Mesh(jax.local_devices()[:1], ("d",))
    with pytest.raises(ValueError, match=r"`in_specs` cannot contain `StateSharding` objects"):
        f = nnx.shard_map(
            lambda m: m.a[...],
            mesh=mesh,
            in_specs=(nnx.StateSharding({...: PartitionSpec()}),),
            out_specs=PartitionSpec(),
            graph=False,
        )
        f(_single(nnx))


@pytest.mark.graph_mode("graph")  # the aliasing check and its message are graph mode's; tree mode refuses any aliasing
@pytest.mark.apis("vmap")
def test_vmap_rejects_a_variable_reached_with_different_axes(nnx: Any) -> None:
    class Weights(nnx.Module):
        def __init__(self, array: Any):
            self.param = nnx.Param(array)

    m = Weights(jnp.arange(10))
    f = nnx.vmap(lambda arg1, arg2: None, in_axes=(0, 1))
    with pytest.raises(
        ValueError,
        match=r"Inconsistent aliasing detected. The following nodes have different prefixes:\n"
        r"Node: Param\n  param: 0\n  param: 0\n  param: 1",
    ):
        f({"a": {"b": m}, "c": m}, [(m, m), m])


@pytest.mark.apis("StateAxes")
def test_stateaxes_map_prefix_rejects_a_variable_no_filter_selects(nnx: Any) -> None:
    axes = nnx.StateAxes({nnx.Param: 0})
    with pytest.raises(ValueError, match=r"No axis found for path=\('a',\)"):
        axes.map_prefix(("a",), nnx.BatchStat(jnp.ones(1)))


@pytest.mark.apis("jit")
def test_jit_rejects_mutating_a_captured_variable_from_inside_the_trace(nnx: Any) -> None:
    model = _single(nnx)

    @nnx.jit
    def f(x: Any) -> Any:
        model.a[...] += 1
        return x

    with raises_named("TraceContextError", r"Cannot mutate Param from a different trace level"):
        f(1.0)


@pytest.mark.apis("jit")
def test_jit_rejects_a_bound_method(nnx: Any) -> None:
    class Scale(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.array(2.0))

        def apply(self, x: Any) -> Any:
            return self.a * x

    with pytest.raises(ValueError, match=r"nnx.jit does not support bound methods"):
        nnx.jit(Scale().apply)


@pytest.mark.graph_mode("graph")  # the message is graph mode's; in tree mode JAX's own pytree structure error speaks
@pytest.mark.apis("while_loop")
def test_while_loop_rejects_a_body_that_changes_the_loop_structure(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"nnx.while_loop requires body function's input and output to have the same"):
        nnx.while_loop(lambda v: v[0] < 3, lambda v: (v[0] + 1,), (0, 1))


@pytest.mark.graph_mode("graph")  # the aliasing check and its message are graph mode's; tree mode refuses any aliasing
@pytest.mark.apis("vmap")
def test_vmap_lists_each_variable_reached_with_different_axes_by_its_path(nnx: Any) -> None:
    class Inner(nnx.Module):
        def __init__(self) -> None:
            self.v = nnx.Param(jnp.zeros(3))
            self.w = nnx.Param(jnp.zeros(3))

    class Outer(nnx.Module):
        def __init__(self) -> None:
            self.a = Inner()

    outer = Outer()
    f = nnx.vmap(lambda *args: None, in_axes=(0, None, None))
    message = (
        "Inconsistent aliasing detected. The following nodes have different prefixes:\n"
        "Node: Param\n  a/v: 0\n  a/v: None\nNode: Param\n  a/w: 0\n  a/w: None"
    )
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        f(outer, outer, outer.a.v)


def returns_text(m: Any, *rest: Any) -> Any:
    """A function whose output is no JAX type (a string inside a dict)."""
    return {"a": "text"}


def scan_returns_text(m: Any, x: Any) -> Any:
    return m, "text"


def scan_stacks_text(c: Any, m: Any, x: Any) -> Any:
    return c, {"a": "text"}


def returns_module_and_text(m: Any) -> Any:
    return m, {"a": "text"}


def loop_returns_text(*index_and_value: Any) -> Any:
    """A loop body that turns the loop value's number into a string."""
    module, _ = index_and_value[-1]
    return module, "text"


class TextCase(NamedTuple):
    """A transformed call returning a string, the function JAX's TypeError names, and the
    output component it names: where flax's traced function holds the string."""

    call: Callable[[Any, Any], Any]
    function: str
    component: str


def _scan(n: Any, fun: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    return n.scan(fun, in_axes=(n.Carry, 0), out_axes=(n.Carry, 0), **options)


RETURNING_TEXT = {
    "jit": TextCase(lambda n, m: n.jit(returns_text)(m), "returns_text", "[2]['a']"),
    "jit given keywords": TextCase(lambda n, m: n.jit(returns_text)(m=m), "returns_text", "[2]['a']"),
    "jit returning the module too": TextCase(
        lambda n, m: n.jit(returns_module_and_text)(m), "returns_module_and_text", "[2][1]['a']"
    ),
    "jit in tree mode": TextCase(lambda n, m: n.jit(returns_text, graph=False)(m), "returns_text", "[0]['a']"),
    "jit without graph updates": TextCase(
        lambda n, m: n.jit(returns_text, graph_updates=False)(m), "returns_text", "[0]['a']"
    ),
    "jit donating its argument": TextCase(
        lambda n, m: n.jit(returns_text, donate_argnums=0)(m), "returns_text", "[2]['a']"
    ),
    "jit with in_shardings": TextCase(
        lambda n, m: n.jit(returns_text, in_shardings=(None,))(m), "returns_text", "[2]['a']"
    ),
    "eval_shape": TextCase(lambda n, m: n.eval_shape(returns_text, m), "returns_text", "['a']"),
    "eval_shape in tree mode": TextCase(
        lambda n, m: n.eval_shape(returns_text, m, graph=False), "returns_text", "['a']"
    ),
    "checkify": TextCase(lambda n, m: n.checkify(returns_text)(m), "returns_text", "[2]['a']"),
    "checkify in tree mode": TextCase(
        lambda n, m: n.checkify(returns_text, graph=False)(m), "returns_text", "[0]['a']"
    ),
    "remat": TextCase(lambda n, m: n.remat(returns_text)(m), "returns_text", "[1]['a']"),
    "remat in tree mode": TextCase(lambda n, m: n.remat(returns_text, graph=False)(m), "returns_text", "[0]['a']"),
    "remat without graph updates": TextCase(
        lambda n, m: n.remat(returns_text, graph_updates=False)(m), "returns_text", "[0]['a']"
    ),
    "cond": TextCase(lambda n, m: n.cond(True, returns_text, returns_text, m), "returns_text", "[1]['a']"),
    "cond in tree mode": TextCase(
        lambda n, m: n.cond(True, returns_text, returns_text, m, graph=False), "returns_text", "[0]['a']"
    ),
    "cond without graph updates": TextCase(
        lambda n, m: n.cond(True, returns_text, returns_text, m, graph_updates=False), "returns_text", "[0]['a']"
    ),
    "switch": TextCase(lambda n, m: n.switch(0, [returns_text, returns_text], m), "returns_text", "[1]['a']"),
    "switch in tree mode": TextCase(
        lambda n, m: n.switch(0, [returns_text], m, graph=False), "returns_text", "[0]['a']"
    ),
    "scan": TextCase(lambda n, m: _scan(n, scan_returns_text)(m, jnp.ones(2)), "scan_returns_text", "[1][2][1]"),
    "scan in tree mode": TextCase(
        lambda n, m: _scan(n, scan_returns_text, graph=False)(m, jnp.ones(2)), "scan_returns_text", "[1][0][1]"
    ),
    "scan without graph updates": TextCase(
        lambda n, m: _scan(n, scan_returns_text, graph_updates=False)(m, jnp.ones(2)), "scan_returns_text", "[1][0][1]"
    ),
    "scan over a broadcast module": TextCase(
        lambda n, m: n.scan(scan_stacks_text, in_axes=(n.Carry, None, 0), out_axes=(n.Carry, 0))(
            jnp.ones(()), m, jnp.ones(2)
        ),
        "scan_stacks_text",
        "[1][2][1]['a']",
    ),
    "while_loop": TextCase(
        lambda n, m: n.while_loop(lambda v: False, loop_returns_text, (m, 1)), "loop_returns_text", "[1]"
    ),
    "while_loop in tree mode": TextCase(
        lambda n, m: n.while_loop(lambda v: False, loop_returns_text, (m, 1), graph=False), "loop_returns_text", "[1]"
    ),
    "fori_loop": TextCase(lambda n, m: n.fori_loop(0, 2, loop_returns_text, (m, 1)), "loop_returns_text", "[1]"),
    "fori_loop in tree mode": TextCase(
        lambda n, m: n.fori_loop(0, 2, loop_returns_text, (m, 1), graph=False), "loop_returns_text", "[0][1][1]"
    ),
    "fori_loop without graph updates": TextCase(
        lambda n, m: n.fori_loop(0, 2, loop_returns_text, (m, 1), graph_updates=False), "loop_returns_text", "[0][1][1]"
    ),
}


@pytest.mark.kind("differential")
@pytest.mark.graph_mode("graph")  # the components are the default mode's; the tree-mode cases pass graph=False
@pytest.mark.apis("jit", "eval_shape", "checkify", "remat", "cond", "switch", "scan", "while_loop", "fori_loop")
@pytest.mark.parametrize("transform", sorted(RETURNING_TEXT))
def test_an_output_of_no_jax_type_is_refused_naming_the_user_s_function_and_the_place(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    """JAX's TypeError names the function it traced: the user's, as flax's does, not an
    implementation's internal wrapper; and the output component, where flax's traced
    function holds the value."""
    case = RETURNING_TEXT[transform]
    mentions = (case.function, f"output component {case.component},")
    assert_same(flax_nnx, nnx, lambda n: case.call(n, n.Linear(2, 3, rngs=n.Rngs(0))), mentions=mentions)


def sets_text(m: Any, *rest: Any) -> Any:
    """A function that sets a Variable of its input to a value of no JAX type."""
    m.kernel.set_value("text")
    return jnp.ones(())


def _scan_sets_text(m: Any, x: Any) -> Any:
    sets_text(m)
    return m, x


class UpdateCase(NamedTuple):
    """A transformed call that sets a Variable to a string, and the part of flax's traced
    output that holds the input's updates (its first index); None where flax raises
    nothing (eval_shape returns no updates)."""

    call: Callable[[Any, Any], Any]
    part: str | None


SETTING_TEXT = {
    "jit": UpdateCase(lambda n, m: n.jit(sets_text)(m), "[0]"),
    "jit in tree mode": UpdateCase(lambda n, m: n.jit(sets_text, graph=False)(m), "[1]"),
    "jit without graph updates": UpdateCase(lambda n, m: n.jit(sets_text, graph_updates=False)(m), "[1]"),
    "jit donating its argument": UpdateCase(lambda n, m: n.jit(sets_text, donate_argnums=0)(m), "[0]"),
    "checkify": UpdateCase(lambda n, m: n.checkify(sets_text)(m), "[0]"),
    "remat": UpdateCase(lambda n, m: n.remat(sets_text)(m), "[0]"),
    "cond": UpdateCase(lambda n, m: n.cond(True, sets_text, sets_text, m), "[0]"),
    "cond in tree mode": UpdateCase(lambda n, m: n.cond(True, sets_text, sets_text, m, graph=False), "[1]"),
    "scan": UpdateCase(
        lambda n, m: n.scan(_scan_sets_text, in_axes=(n.Carry, 0), out_axes=(n.Carry, 0))(m, jnp.ones(2)), "[0]"
    ),
    "eval_shape": UpdateCase(lambda n, m: (n.eval_shape(sets_text, m), m.kernel[...]), None),
    "eval_shape in tree mode": UpdateCase(lambda n, m: (n.eval_shape(sets_text, m, graph=False), m.kernel[...]), None),
}


@pytest.mark.kind("differential")
@pytest.mark.graph_mode("graph")  # the parts are the default mode's; the tree-mode cases pass graph=False
@pytest.mark.apis("jit", "checkify", "remat", "cond", "scan", "eval_shape")
@pytest.mark.parametrize("transform", sorted(SETTING_TEXT))
def test_an_update_of_no_jax_type_is_refused_in_the_part_flax_s_updates_hold(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    """A Variable set to a string inside a transform is JAX's TypeError, naming the user's
    function and the part of the traced output where flax's holds the updates; eval_shape,
    which writes nothing back, runs and leaves the caller's Variable as it was."""
    case = SETTING_TEXT[transform]
    mentions = () if case.part is None else ("sets_text", f"output component {case.part}")
    assert_same(flax_nnx, nnx, lambda n: case.call(n, n.Linear(2, 3, rngs=n.Rngs(0))), mentions=mentions)


@pytest.mark.kind("differential")
@pytest.mark.graph_mode("graph")  # the aliasing check is graph mode's; tree mode refuses any Variable held twice
@pytest.mark.apis("grad", "value_and_grad", "DiffState")
@pytest.mark.parametrize("argnums", ["default", "(0,)", "DiffState(0, Param)"])
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_a_variable_reached_by_a_differentiated_and_another_argument_is_refused_in_flax_s_words(
    nnx: Any, flax_nnx: Any, transform: str, argnums: str
) -> None:
    """With graph updates: the whole message, paths and prefixes (differentiated or None)."""

    def message(n: Any) -> Any:
        shared = n.Param(jnp.ones(2))
        given = {"default": {}, "(0,)": {"argnums": (0,)}, "DiffState(0, Param)": {"argnums": n.DiffState(0, n.Param)}}[
            argnums
        ]
        try:
            getattr(n, transform)(lambda a, b: jnp.sum(a.lin.kernel[...]), **given)(
                n.Dict(lin=n.Dict(kernel=shared)), n.Dict(k=shared)
            )
        except ValueError as error:
            return str(error)
        return None

    outcome = assert_same(flax_nnx, nnx, message)
    assert "Inconsistent aliasing" in str(outcome.result), f"flax's {transform} refuses the shared Param"


def _prefix_object_refused(n: Any, transform: str, graph: bool) -> Any:
    """The call of ``transform`` with a prefix object that needs graph updates, made in tree
    mode or in graph mode without them."""
    mode = {"graph": graph, "graph_updates": False}
    P, mesh = PartitionSpec, jax.make_mesh((1,), ("x",))
    model = n.Dict(a=n.Param(jnp.ones(1)))
    loss = lambda m: jnp.sum(m.a[...])  # noqa: E731
    calls: dict[str, Callable[[], Any]] = {
        "grad": lambda: n.grad(loss, argnums=n.DiffState(0, n.Param), **mode)(model),
        "value_and_grad": lambda: n.value_and_grad(loss, argnums=n.DiffState(0, n.Param), **mode)(model),
        "custom_vjp": lambda: n.custom_vjp(loss, nondiff_argnums=(n.DiffState(0, ...),), **mode)(model),
        "vmap in_axes": lambda: n.vmap(loss, in_axes=(n.StateAxes({...: 0}),), **mode)(model),
        "vmap out_axes": lambda: n.vmap(lambda m: m, in_axes=0, out_axes=n.StateAxes({...: 0}), **mode)(model),
        "pmap in_axes": lambda: n.pmap(loss, in_axes=(n.StateAxes({...: 0}),), **mode)(model),
        "scan in_axes": lambda: n.scan(lambda c, m: (c, None), in_axes=(n.Carry, n.StateAxes({...: 0})), **mode)(
            0, model
        ),
        "shard_map in_specs": lambda: n.shard_map(
            loss, mesh=mesh, in_specs=(n.StateSharding({...: P()}),), out_specs=P(), **mode
        )(model),
        "jit in_shardings": lambda: n.jit(
            loss, in_shardings=(n.StateSharding({...: jax.NamedSharding(mesh, P())}),), **mode
        )(model),
        "jit out_shardings": lambda: n.jit(
            lambda m: m.a[...], out_shardings=n.StateSharding({...: jax.NamedSharding(mesh, P())}), **mode
        )(model),
    }
    try:
        calls[transform]()
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.kind("differential")
@pytest.mark.apis(
    "grad",
    "value_and_grad",
    "custom_vjp",
    "vmap",
    "pmap",
    "scan",
    "shard_map",
    "jit",
    "DiffState",
    "StateAxes",
    "StateSharding",
)
@pytest.mark.parametrize("graph", [False, True], ids=["in tree mode", "in graph mode without graph updates"])
@pytest.mark.parametrize(
    "transform",
    [
        "grad",
        "value_and_grad",
        "custom_vjp",
        "vmap in_axes",
        "vmap out_axes",
        "pmap in_axes",
        "scan in_axes",
        "shard_map in_specs",
        "jit in_shardings",
        "jit out_shardings",
    ],
)
def test_a_prefix_object_that_needs_graph_updates_is_refused_in_flax_s_words(
    nnx: Any, flax_nnx: Any, transform: str, graph: bool
) -> None:
    """The whole message: the argument named, the three ways out (value_and_grad's names grad,
    as flax's does)."""
    outcome = assert_same(flax_nnx, nnx, lambda n: _prefix_object_refused(n, transform, graph))
    assert "cannot contain" in str(outcome.result), f"flax refuses the prefix object given to {transform}"


def _three_outputs(nnx: Any, out_axes: tuple[int, ...]) -> Any:
    def made(x: Any) -> Any:
        twice, once = nnx.Param(x), nnx.Param(x)
        return twice, twice, once

    out = nnx.vmap(made, out_axes=out_axes, graph=True, graph_updates=False)(jnp.ones((2, 2)))
    return out, out[0] is out[1]


@pytest.mark.kind("differential")
@pytest.mark.apis("vmap")
@pytest.mark.parametrize("out_axes", [(0, 1, 0), (0, 0, 1), (0, 0, 0)], ids=str)
def test_an_output_holding_a_variable_twice_beside_another_gets_one_prefix_as_in_flax(
    nnx: Any, flax_nnx: Any, out_axes: tuple[int, ...]
) -> None:
    """Graph mode without graph updates: a Variable the output holds twice (among three)
    must get one ``out_axes`` entry, else flax's aliasing ValueError names both paths."""
    assert_same(
        flax_nnx, nnx, lambda n: _three_outputs(n, out_axes), mentions=("Inconsistent aliasing",) if out_axes[1] else ()
    )
