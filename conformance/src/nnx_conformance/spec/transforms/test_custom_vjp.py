"""Parity of ``nnx.custom_vjp`` with flax.nnx: the gradients ``bwd``'s tangents give each
argument (a State for a Module, arrays in place, whatever the arguments' order or nesting),
the ``updates_g`` it receives (by keyword too), the nondiff arguments first, and the error
of a call before ``defvjp``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

CUSTOM_VJP_DOC = "api transforms page: custom_vjp docstring (updates_g, nondiff_argnums)"


def _bar(nnx: Any) -> Any:
    return gs.classes(nnx).node(
        x=nnx.Param(jnp.array(1.0)), y=nnx.Param(jnp.array(2.0)), z=nnx.BatchStat(jnp.array(3.0))
    )


@pytest.mark.apis("custom_vjp")
@pytest.mark.documented(CUSTOM_VJP_DOC)
def test_custom_vjp_bwd_may_take_updates_g_by_keyword(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(graph_updates=False)
        def f(m: Any) -> Any:
            m.z[...] *= 2.0
            return jnp.sin(m.x) * m.y

        def fwd(m: Any) -> Any:
            return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

        received = []

        def bwd(res: Any, g: Any, *, updates_g: Any) -> Any:
            received.append(updates_g)
            cos_x, sin_x, m = res
            m_g = nnx.clone(m)
            m_g.x[...] = cos_x * g * m.y
            m_g.y[...] = sin_x * g
            m_g.z[...] = jnp.zeros(())
            return (m_g,)

        f.defvjp(fwd, bwd)
        m = _bar(nnx)
        return nnx.grad(f, graph_updates=False)(m), m, received

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp")
@pytest.mark.documented(CUSTOM_VJP_DOC)
def test_custom_vjp_bwd_gets_the_nondiff_arguments_first(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(nondiff_argnums=(0,))
        def f(n: Any, x: Any) -> Any:
            return x * n

        f.defvjp(lambda n, x: (f(n, x), x), lambda n, x, g: (g * n,))
        return jax.grad(lambda x: f(jnp.array(3.0), x))(jnp.array(2.0))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(CUSTOM_VJP_DOC)
@pytest.mark.parametrize("order", ["array, module, array", "module, array, array", "array, array, module"])
def test_custom_vjp_tangents_from_bwd_are_the_gradients_of_each_argument(nnx: Any, flax_nnx: Any, order: str) -> None:
    """With graph updates, bwd's tangents (a State for the Module, arrays for the arrays)
    are what grad returns for each argument, whatever their order."""
    names = order.split(", ")
    module_at = names.index("module")

    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(graph_updates=True)
        def f(*args: Any) -> Any:
            m = args[module_at]
            arrays = [a for i, a in enumerate(args) if i != module_at]
            return jnp.sin(m.x) * m.y * arrays[0] + arrays[1] ** 2

        def fwd(*args: Any) -> Any:
            return f(*args), args

        def bwd(res: Any, g: Any) -> Any:
            (input_updates_g, out_g) = g
            tangents = []
            for i, arg in enumerate(res):
                if i == module_at:
                    m_g = jax.tree.map(lambda x: x, input_updates_g[i])
                    m_g["x"][...] = jnp.cos(arg.x[...]) * out_g * 3.0
                    m_g["y"][...] = out_g * 5.0
                    m_g["z"][...] = out_g * 7.0
                    tangents.append(m_g)
                else:
                    tangents.append(out_g * (i + 11.0) * jnp.ones_like(arg))
            return tuple(tangents)

        f.defvjp(fwd, bwd)
        args = [_bar(nnx) if name == "module" else jnp.array(0.5 + i) for i, name in enumerate(names)]
        return nnx.grad(f, argnums=(0, 1, 2))(*args)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(CUSTOM_VJP_DOC)
@pytest.mark.parametrize("module_first", [True, False], ids=["module first", "array first"])
def test_custom_vjp_updates_g_and_tangents_of_an_argument_holding_a_module_mirror_it(
    nnx: Any, flax_nnx: Any, module_first: bool
) -> None:
    """An argument that is a pair (a Module and an array) gets, in ``updates_g``, a pair with
    a State at the Module's place and None at the array's; its tangent is such a pair too."""
    module_at = 0 if module_first else 1

    def scenario(nnx: Any) -> Any:
        received = []

        @nnx.custom_vjp(graph_updates=True)
        def f(a: Any, pair: Any) -> Any:
            m, x = pair[module_at], pair[1 - module_at]
            return jnp.sin(m.x[...]) * m.y[...] * x * a

        def bwd(res: Any, g: Any) -> Any:
            input_updates_g, out_g = g
            received.append(input_updates_g)
            a, _pair = res
            state = jax.tree.map(lambda v: out_g * 3.0 * jnp.ones_like(v), input_updates_g[1][module_at])
            tangent = [state, out_g * 5.0] if module_first else [out_g * 5.0, state]
            return out_g * 2.0 * jnp.ones_like(a), tuple(tangent)

        f.defvjp(lambda a, pair: (f(a, pair), (a, pair)), bwd)
        m = _bar(nnx)
        pair = (m, jnp.array(0.5)) if module_first else (jnp.array(0.5), m)
        return nnx.grad(f, argnums=(0, 1))(jnp.array(1.5), pair), received

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(CUSTOM_VJP_DOC)
def test_custom_vjp_gives_each_of_two_modules_its_own_tangent(nnx: Any, flax_nnx: Any) -> None:
    """With graph updates and two Modules of one structure, each gets the State bwd gave it."""

    def scenario(nnx: Any) -> Any:
        @nnx.custom_vjp(graph_updates=True)
        def f(first: Any, second: Any) -> Any:
            return first.x[...] * second.y[...]

        def bwd(res: Any, g: Any) -> Any:
            input_updates_g, out_g = g
            return tuple(
                jax.tree.map(lambda v, scale=scale: out_g * scale * jnp.ones_like(v), updates)
                for scale, updates in zip((3.0, 5.0), input_updates_g)
            )

        f.defvjp(lambda first, second: (f(first, second), None), bwd)
        return nnx.grad(f, argnums=(0, 1))(_bar(nnx), _bar(nnx))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("custom_vjp")
@pytest.mark.documented(CUSTOM_VJP_DOC)
@pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, False)],
    ids=["graph updates", "graph mode without updates", "tree mode"],
)
def test_a_custom_vjp_called_before_defvjp_raises(nnx: Any, flax_nnx: Any, mode: tuple[bool, bool]) -> None:
    graph, graph_updates = mode
    assert_same(flax_nnx, nnx, lambda nnx: nnx.custom_vjp(lambda x: x, graph=graph, graph_updates=graph_updates)(1.0))


NONDIFF = {
    "none": lambda nnx: (),
    "the scale by int": lambda nnx: (0,),
    "the Module by int": lambda nnx: (1,),
    "the Module's Params differentiable by DiffState": lambda nnx: (nnx.DiffState(1, nnx.Param),),
    "the scale by int and the Module's x differentiable by DiffState": lambda nnx: (
        0,
        nnx.DiffState(1, nnx.PathContains("x")),
    ),
}
ARGNUMS = {
    "the array": lambda nnx: 2,
    "the Module and the array": lambda nnx: (1, 2),
    "the scale and the array": lambda nnx: (0, 2),
    "the Module by DiffState": lambda nnx: nnx.DiffState(1, ...),
    "the Module's x by DiffState": lambda nnx: nnx.DiffState(1, nnx.PathContains("x")),
}
MODES = st.sampled_from(
    [{}, {"graph": True, "graph_updates": True}, {"graph": True, "graph_updates": False}, {"graph": False}]
)
OUT_OF_SYNC = {
    ("the Module's Params differentiable by DiffState", "the Module by DiffState"),
    ("the scale by int and the Module's x differentiable by DiffState", "the Module and the array"),
    ("the scale by int and the Module's x differentiable by DiffState", "the Module by DiffState"),
}
"""grad asked for a Variable that custom_vjp's DiffState gives no tangent: the docstring
says grad cannot calculate it and keeps the two filters in sync (flax 0.12.12 raises jax's
UnexpectedTracerError there, the reference gives it a zero gradient)."""


def _scaled_tangent(nnx: Any, arg: Any, updates: Any, out_g: Any, scale: float) -> Any:
    """A tangent shaped as the docstring says: a copy of the argument's input-updates State
    with values scaled from ``out_g``, or for an array, one of its shape."""
    if updates is not None:
        return jax.tree.map(lambda v: out_g * scale * jnp.ones_like(v), updates)
    if isinstance(arg, nnx.Module):
        return jax.tree.map(lambda v: out_g * scale * jnp.ones_like(v), arg)
    return out_g * scale * jnp.ones_like(arg)


@pytest.mark.apis("custom_vjp", "grad")
@pytest.mark.documented(CUSTOM_VJP_DOC)
@given(nondiff=st.sampled_from(sorted(NONDIFF)), argnums=st.sampled_from(sorted(ARGNUMS)), mode=MODES)
@example(nondiff="the scale by int", argnums="the Module by DiffState", mode={})
def test_custom_vjp_bwd_gets_the_nondiff_arguments_then_the_residuals_and_cotangents_as_flax(
    nnx: Any, flax_nnx: Any, nondiff: str, argnums: str, mode: dict[str, bool]
) -> None:
    """``f(scale, module, x)`` under ``grad`` (both in one mode): ``bwd`` gets the int ``nondiff_argnums``'
    arguments first, then the residuals and the cotangents (``(input_updates_g, out_g)`` with
    graph updates, ``out_g`` without); its tangents become the gradients."""
    assume((nondiff, argnums) not in OUT_OF_SYNC)

    def scenario(nnx: Any) -> Any:
        nondiff_argnums = NONDIFF[nondiff](nnx)
        skipped = [a for a in nondiff_argnums if isinstance(a, int)]
        received = []

        @nnx.custom_vjp(nondiff_argnums=nondiff_argnums, **mode)
        def f(scale: Any, m: Any, x: Any) -> Any:
            return jnp.sin(x) * scale * m.x[...] * m.y[...] + m.z[...]

        def bwd(*args: Any) -> Any:
            *given, res, g = args
            received.append((given, g))
            rest = [arg for i, arg in enumerate(res) if i not in skipped]
            updates_g, out_g = g if isinstance(g, tuple) else ([None] * len(rest), g)
            return tuple(
                _scaled_tangent(nnx, arg, updates, out_g, 3.0 + i)
                for i, (arg, updates) in enumerate(zip(rest, updates_g))
            )

        f.defvjp(lambda *args: (f(*args), args), bwd)
        m = _bar(nnx)
        grads = nnx.grad(f, argnums=ARGNUMS[argnums](nnx), **mode)(jnp.array(1.5), m, jnp.array(0.5))
        return grads, m, received

    assert_same(flax_nnx, nnx, scenario)
