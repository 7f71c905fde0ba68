"""Differential tests of the paths tree mode's sharing error names: a Variable reached from
two arguments, an argument and a keyword argument, two entries of one argument, a tuple and
a dict argument, or one Module passed twice is refused with flax's ValueError naming both
places as flax writes them: under the root flax gives the inputs of each transform
(``.args`` and ``.kwargs`` of a call, jvp's and vjp's ``.primals``, cond's and switch's
``.operands``; ``custom_vjp`` moves keywords to their positions first)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


class Place(NamedTuple):
    """Where the two Linears sharing a Param go: ``arguments(a, b)`` gives the positional and
    keyword arguments; ``paths`` are the two places under the inputs' root, positional first."""

    arguments: Callable[[Any, Any], tuple[tuple[Any, ...], dict[str, Any]]]
    paths: tuple[str, str]


PLACES = {
    "two arguments": Place(lambda a, b: ((a, b), {}), ("[0].w", "[1].w")),
    "an argument and a keyword": Place(lambda a, b: ((a,), {"other": b}), ("[0].w", "['other'].w")),
    "two entries of one argument": Place(lambda a, b: (((a, b),), {}), ("[0][0].w", "[0][1].w")),
    "a tuple and a dict": Place(lambda a, b: (((a,), {"k": b}), {}), ("[0][0].w", "[1]['k'].w")),
    "one Module twice": Place(lambda a, b: ((a, a), {}), ("[0].bias", "[1].bias")),
}


def _f(x: Any, other: Any = None) -> Any:
    return jnp.ones(())


def _custom_vjp(nnx: Any) -> Any:
    function = nnx.custom_vjp(_f, graph=False)
    function.defvjp(lambda *args, **kwargs: (jnp.ones(()), None), lambda residuals, g: g)
    return function


TRANSFORMS: dict[str, tuple[str, Callable[..., Any]]] = {
    "jit": (".args", lambda nnx, *args, **kwargs: nnx.jit(_f, graph=False)(*args, **kwargs)),
    "eval_shape": (".args", lambda nnx, *args, **kwargs: nnx.eval_shape(_f, *args, graph=False, **kwargs)),
    "vmap": (".args", lambda nnx, *args, **kwargs: nnx.vmap(_f, in_axes=None, graph=False)(*args, **kwargs)),
    "grad": (".args", lambda nnx, *args, **kwargs: nnx.grad(_f, graph=False)(*args, **kwargs)),
    "remat": (".args", lambda nnx, *args, **kwargs: nnx.remat(_f, graph=False)(*args, **kwargs)),
    "checkify": (".args", lambda nnx, *args, **kwargs: nnx.checkify(_f, graph=False)(*args, **kwargs)),
    "custom_vjp": (".args", lambda nnx, *args, **kwargs: _custom_vjp(nnx)(*args, **kwargs)),
    "vjp": (".primals", lambda nnx, *args: nnx.vjp(_f, *args, graph=False)),
    "jvp": (".primals", lambda nnx, *args: nnx.jvp(_f, args, args, graph=False)),
    "cond": (".operands", lambda nnx, *args: nnx.cond(True, _f, _f, *args, graph=False)),
    "switch": (".operands", lambda nnx, *args: nnx.switch(0, [_f, _f], *args, graph=False)),
}
"""Each transform: the root flax names its inputs by, and a call of it on ``_f``."""


@pytest.mark.apis(*TRANSFORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("place", sorted(PLACES))
def test_tree_mode_names_both_places_of_a_shared_variable_as_flax(
    nnx: Any, flax_nnx: Any, place: str, transform: str
) -> None:
    root, call = TRANSFORMS[transform]
    _args, kwargs = PLACES[place].arguments("a", "b")
    if kwargs and root != ".args":
        pytest.skip(f"{transform} takes no keyword arguments")
    if kwargs and transform == "checkify":
        pytest.skip(
            "flax 0.12.12's tree-mode checkify fails on every keyword argument before it looks for "
            "sharing (test_checkify_passes_keyword_arguments_in_tree_mode)"
        )

    def scenario(nnx: Any) -> Any:
        shared = nnx.Param(jnp.ones(2))
        a, b = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 2, rngs=nnx.Rngs(1))
        a.w = b.w = shared
        call_args, call_kwargs = PLACES[place].arguments(a, b)
        return call(nnx, *call_args, **call_kwargs)

    first, second = PLACES[place].paths
    if kwargs and transform == "custom_vjp":  # the keyword is moved to its position, 1
        second = "[1].w"
    mentions = (root + first, (".kwargs" if kwargs and transform != "custom_vjp" else root) + second)
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=mentions)
    assert outcome.error is not None, f"flax refuses a Variable shared by {place} in tree mode"


@pytest.mark.kind("property")
@pytest.mark.apis("checkify")
@pytest.mark.documented(
    "docstring of flax.nnx.checkify: a lifted jax.experimental.checkify.checkify, which passes keyword arguments"
)
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
def test_checkify_passes_keyword_arguments_in_either_mode(nnx: Any, graph: bool) -> None:
    _, out = nnx.checkify(lambda x, scale=1.0: x * scale, graph=graph)(jnp.ones(1), scale=2.0)
    assert float(out[0]) == 2.0, f"checkify(graph={graph}) with scale=2.0 gave {out}"


class ReturningNew(NamedTuple):
    """A transform of ``f`` (``graph`` given) called on a small input, giving ``f``'s output;
    ``paths``: where tree mode names the output's two places."""

    call: Callable[[Any, Callable[..., Any], bool], Any]
    paths: tuple[str, str] = (".out[0]", ".out[1]")


OUTPUT_TRANSFORMS: dict[str, ReturningNew] = {
    "jit": ReturningNew(lambda nnx, f, graph: nnx.jit(f, graph=graph, graph_updates=False)(jnp.ones(1))),
    "eval_shape": ReturningNew(lambda nnx, f, graph: nnx.eval_shape(f, jnp.ones(1), graph=graph, graph_updates=False)),
    "remat": ReturningNew(lambda nnx, f, graph: nnx.remat(f, graph=graph, graph_updates=False)(jnp.ones(1))),
    "cond": ReturningNew(lambda nnx, f, graph: nnx.cond(True, f, f, jnp.ones(1), graph=graph, graph_updates=False)),
    "vmap": ReturningNew(lambda nnx, f, graph: nnx.vmap(f, graph=graph, graph_updates=False)(jnp.ones((2, 1)))),
    "scan": ReturningNew(
        lambda nnx, f, graph: nnx.scan(
            lambda c, x: (c, f(x)), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), graph=graph, graph_updates=False
        )(jnp.ones(()), jnp.ones((2, 1)))[1],
        (".out[1][0]", ".out[1][1]"),
    ),
    "grad": ReturningNew(
        lambda nnx, f, graph: nnx.grad(lambda x: (x.sum(), f(x)), has_aux=True, graph=graph, graph_updates=False)(
            jnp.ones(1)
        )[1],
        (".out[1][0]", ".out[1][1]"),
    ),
}


@pytest.mark.apis(*OUTPUT_TRANSFORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
@pytest.mark.parametrize("transform", sorted(OUTPUT_TRANSFORMS))
def test_a_new_variable_returned_twice_is_refused_in_tree_mode_only_as_by_flax(
    nnx: Any, flax_nnx: Any, transform: str, graph: bool
) -> None:
    """Without graph updates, graph mode returns one new Variable at two places of the output,
    the same object at both; tree mode refuses it, naming both (``.out[0]``, ``.out[1]``
    where the output is the function's)."""

    def scenario(nnx: Any) -> Any:
        def f(x: Any) -> Any:
            param = nnx.Param(x)
            return param, param

        first, second = OUTPUT_TRANSFORMS[transform].call(nnx, f, graph)
        return first.shape, second.shape, first is second

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=() if graph else OUTPUT_TRANSFORMS[transform].paths)
    assert (outcome.error is None) == graph, f"flax refuses a Variable returned twice in tree mode only (graph={graph})"


RETURNED = {
    "a submodule's attribute": (lambda m: m.lin.kernel, ("lin", "kernel")),
    "an item of an nnx.List": (lambda m: m.layers[0].bias, ("layers", 0, "bias")),
    "an entry of an nnx.Dict": (lambda m: m.table["k"], ("table", "k")),
}
"""Where the input Variable returned sits in the Module given, and its path there."""


class ReturningInput(NamedTuple):
    """A transform's call returning ``f(m)``, the root flax names its inputs by, and whether its
    graph mode names them by the node's state (flax's eval_shape and make_jaxpr name them by
    attribute)."""

    call: Callable[..., Any]
    root: str = ".args"
    graph_input_paths: bool = True


RETURNING_CALLS: dict[str, ReturningInput] = {
    "jit": ReturningInput(lambda nnx, f, m, graph: nnx.jit(f, graph=graph, graph_updates=False)(m)),
    "eval_shape": ReturningInput(
        lambda nnx, f, m, graph: nnx.eval_shape(f, m, graph=graph, graph_updates=False), graph_input_paths=False
    ),
    "remat": ReturningInput(lambda nnx, f, m, graph: nnx.remat(f, graph=graph, graph_updates=False)(m)),
    "make_jaxpr": ReturningInput(
        lambda nnx, f, m, graph: nnx.make_jaxpr(f, graph=graph, graph_updates=False)(m), graph_input_paths=False
    ),
    "cond": ReturningInput(
        lambda nnx, f, m, graph: nnx.cond(True, f, f, m, graph=graph, graph_updates=False), ".operands"
    ),
}


@pytest.mark.apis(*RETURNING_CALLS, "List", "Dict")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
@pytest.mark.parametrize("transform", sorted(RETURNING_CALLS))
@pytest.mark.parametrize("where", sorted(RETURNED))
def test_an_input_variable_returned_without_graph_updates_is_refused_naming_its_paths_as_flax(
    nnx: Any, flax_nnx: Any, where: str, transform: str, graph: bool
) -> None:
    """Tree mode names the places by attribute (``.args[0].lin.kernel``, ``.out``); graph mode
    without graph updates by the node's state (``.args[0].__state__['lin']['kernel']``,
    ``.out.__state__``)."""
    pick, path = RETURNED[where]
    returning = RETURNING_CALLS[transform]

    def scenario(nnx: Any) -> Any:
        class Holder(nnx.Module):
            def __init__(self) -> None:
                self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                self.layers = nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(1))])
                self.table = nnx.Dict(k=nnx.Param(jnp.ones(1)))

        return returning.call(nnx, pick, Holder(), graph)

    by_attribute = returning.root + "[0]" + "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path)
    by_state = returning.root + "[0].__state__" + "".join(f"[{key!r}]" for key in path)
    if graph:
        mentions = (by_state if returning.graph_input_paths else by_attribute, ".out.__state__")
    else:
        mentions = (by_attribute,)
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=mentions)
    assert outcome.error is not None, f"flax refuses an input Variable returned by {transform}"


@pytest.mark.apis("eval_shape", "make_jaxpr", "jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["eval_shape", "make_jaxpr", "jit"])
def test_without_graph_updates_a_variable_shared_among_the_inputs_is_refused_as_by_flax(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    """flax's eval_shape and make_jaxpr refuse one Variable at two places of their inputs in
    graph mode without graph updates, naming both by attribute; jit takes it."""

    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        model.other = model.kernel

        def f(m: Any) -> Any:
            return m(jnp.ones(2))

        options = {"graph": True, "graph_updates": False}
        if transform == "eval_shape":
            return nnx.eval_shape(f, model, **options)
        if transform == "make_jaxpr":
            return str(nnx.make_jaxpr(f, **options)(model))
        return nnx.jit(f, **options)(model)

    refused = transform != "jit"
    outcome = assert_same(flax_nnx, nnx, scenario, mentions=(".args[0].kernel", ".args[0].other") if refused else ())
    assert (outcome.error is not None) == refused, f"flax's {transform} on a Module holding a Variable twice"
