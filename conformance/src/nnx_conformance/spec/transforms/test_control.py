"""Parity of the remaining lifted transforms with flax.nnx: jvp, vjp, cond, switch,
fori_loop, while_loop, pmap, shard_map, checkify, eval_shape, remat and make_jaxpr run
a function that reads a Param and counts its calls in a BatchStat, in graph and tree
mode, with and without graph updates, chosen per call or by the global switches; the
results, and the Module left behind, are flax's. jvp and vjp not given their inputs
return flax's ``functools.partial``, holding the mode they were made in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from jax.experimental import checkify
from jax.sharding import Mesh, PartitionSpec

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

TRANSFORMS_PAGE = "api transforms page (graph and graph_updates arguments of each transform)"

X = np.arange(1.0, 3.0, dtype=np.float32)


def _model(nnx: Any) -> Any:
    """A Module with a Param ``w`` and a call counter ``calls`` (BatchStat)."""
    return gs.classes(nnx).node(w=nnx.Param(jnp.asarray([0.5, -1.5])), calls=nnx.BatchStat(jnp.zeros(())))


def _loss(m: Any, x: Any) -> Any:
    """Counts the call in ``m.calls`` and returns ``sum(w * x)``."""
    m.calls[...] += 1
    return (m.w[...] * x).sum()


def _mesh() -> Mesh:
    return Mesh(np.array(jax.devices()[:1]), ("x",))


def _jvp(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    tangent = jax.tree.map(jnp.ones_like, m) if not mode.graph else nnx.clone(m)
    return nnx.jvp(_loss, (m, jnp.asarray(X)), (tangent, jnp.ones(2)), **mode.kwargs())


def _vjp(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    y, pullback = nnx.vjp(_loss, m, jnp.asarray(X), **mode.kwargs())
    return y, pullback(jnp.ones(()))


def _cond(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    double = lambda m, x: _loss(m, 2 * x)  # noqa: E731 - a branch
    return [nnx.cond(pred, _loss, double, m, jnp.asarray(X), **mode.kwargs()) for pred in (True, False)]


def _switch(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    branches = [_loss, lambda m, x: _loss(m, -x), lambda m, x: m.w[...].sum()]
    return [nnx.switch(index, branches, m, jnp.asarray(X), **mode.kwargs()) for index in (2, 0, 1)]


def _fori_loop(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    def body(i: Any, m: Any) -> Any:
        m.w[...] += i
        _loss(m, jnp.asarray(X))
        return m

    return nnx.fori_loop(0, 3, body, m, **mode.kwargs())


def _while_loop(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    def body(m: Any) -> Any:
        m.w[...] *= 2
        _loss(m, jnp.asarray(X))
        return m

    return nnx.while_loop(lambda m: m.calls[...] < 3, body, m, **mode.kwargs())


def _pmap(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    return nnx.pmap(lambda m, x: m.w[...] * x, in_axes=(None, 0), **mode.kwargs())(m, jnp.asarray(X)[None])


def _shard_map(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    spec = PartitionSpec()
    return nnx.shard_map(_loss, mesh=_mesh(), in_specs=(spec, spec), out_specs=spec, **mode.kwargs())(m, jnp.asarray(X))


def _checkify(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    def checked(m: Any, x: Any) -> Any:
        checkify.check(jnp.all(x > 1), "x must exceed 1")
        return _loss(m, x)

    error, y = nnx.checkify(checked, **mode.kwargs())(m, jnp.asarray(X))
    return error.get(), y


def _eval_shape(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    out = nnx.eval_shape(lambda m, x: (_loss(m, x), m.w[...] * x), m, jnp.asarray(X), **mode.kwargs())
    return jax.tree.map(lambda s: (s.shape, str(s.dtype)), out)


def _remat(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    return nnx.remat(_loss, **mode.kwargs())(m, jnp.asarray(X))


def _make_jaxpr(nnx: Any, m: Any, mode: gs.Mode) -> Any:
    jaxpr = nnx.make_jaxpr(_loss, **mode.kwargs())(m, jnp.asarray(X))
    return [str(aval) for aval in jaxpr.out_avals]


CALLS: dict[str, Callable[[Any, Any, gs.Mode], Any]] = {
    "jvp": _jvp,
    "vjp": _vjp,
    "cond": _cond,
    "switch": _switch,
    "fori_loop": _fori_loop,
    "while_loop": _while_loop,
    "pmap": _pmap,
    "shard_map": _shard_map,
    "checkify": _checkify,
    "eval_shape": _eval_shape,
    "remat": _remat,
    "make_jaxpr": _make_jaxpr,
}


def _rejected(transform: str, mode: gs.Mode) -> bool:
    """Whether flax rejects ``transform`` in ``mode``: jvp and vjp in graph mode with graph
    updates, make_jaxpr with graph updates asked for in any mode."""
    if transform == "make_jaxpr":
        return mode.updates
    return transform in ("jvp", "vjp") and mode.graph and mode.updates


def _scenario(transform: str, mode: gs.Mode) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        m = _model(nnx)
        with mode.context(nnx):
            result = CALLS[transform](nnx, m, mode)
        return result, m

    return scenario


@pytest.mark.apis(*CALLS, "set_graph_mode", "set_graph_updates")
@pytest.mark.documented(TRANSFORMS_PAGE)
@pytest.mark.parametrize("transform", sorted(CALLS))
@given(mode=gs.modes)
def test_a_transform_returns_flax_results_and_leaves_flax_state(
    nnx: Any, flax_nnx: Any, transform: str, mode: gs.Mode
) -> None:
    assume(not _rejected(transform, mode))
    assert_same(flax_nnx, nnx, _scenario(transform, mode))


REJECTED = [
    pytest.param(transform, mode, id=f"{transform}-graph={mode.graph}-{'per_call' if mode.per_call else 'global'}")
    for transform in ("jvp", "vjp", "make_jaxpr")
    for mode in (gs.Mode(graph, True, per_call) for graph in (True, False) for per_call in (True, False))
    if _rejected(transform, mode)
]


@pytest.mark.apis("jvp", "vjp", "make_jaxpr")
@pytest.mark.documented("api transforms page: make_jaxpr raises an error if graph_updates=True")
@pytest.mark.parametrize(("transform", "mode"), REJECTED)
def test_graph_updates_a_transform_does_not_support_are_rejected(
    nnx: Any, flax_nnx: Any, transform: str, mode: gs.Mode
) -> None:
    outcome = assert_same(flax_nnx, nnx, _scenario(transform, mode), mentions=(f"nnx.{transform}", "graph_updates"))
    expected = ValueError if transform == "make_jaxpr" else NotImplementedError
    assert isinstance(outcome.error, expected), f"flax's nnx.{transform} rejects graph updates with {expected.__name__}"


def _loss_and_aux(m: Any, x: Any) -> Any:
    """``_loss`` with ``w * x`` as its auxiliary output."""
    return _loss(m, x), m.w[...] * x


def _apply_later(nnx: Any, transform: str, later: Any, m: Any, mode: gs.Mode) -> Any:
    """Calls what ``nnx.jvp(f)`` / ``nnx.vjp(f)`` gave with the inputs they were not given."""
    if transform == "jvp":
        tangent = jax.tree.map(jnp.ones_like, m) if not mode.graph else nnx.clone(m)
        return later((m, jnp.asarray(X)), (tangent, jnp.ones(2)))
    y, pullback, *aux = later(m, jnp.asarray(X))
    return y, pullback(jnp.ones(())), aux


@pytest.mark.apis("jvp", "vjp", "set_graph_mode", "set_graph_updates")
@given(
    transform=st.sampled_from(["jvp", "vjp"]),
    mode=gs.modes,
    has_aux=st.booleans(),
    decorator=st.booleans(),
    called_outside=st.booleans(),
)
def test_jvp_and_vjp_without_inputs_give_a_partial_holding_their_mode_as_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: gs.Mode, has_aux: bool, decorator: bool, called_outside: bool
) -> None:
    assume(not _rejected(transform, mode))

    def scenario(nnx: Any) -> Any:
        m = _model(nnx)
        f = _loss_and_aux if has_aux else _loss
        with mode.context(nnx):
            later = getattr(nnx, transform)(has_aux=has_aux, **mode.kwargs())
            made = [later] if decorator else []
            later = later(f) if decorator else getattr(nnx, transform)(f, has_aux=has_aux, **mode.kwargs())
            made.append(later)
            result = None if called_outside else _apply_later(nnx, transform, later, m, mode)
        if called_outside:  # in the release's graph mode with graph updates, which jvp and vjp refuse
            result = _apply_later(nnx, transform, later, m, mode)
        parts = [(getattr(p, "func", None), getattr(p, "args", None), getattr(p, "keywords", None)) for p in made]
        return [type(p).__name__ for p in made], [(getattr(f, "__name__", f), a, k) for f, a, k in parts], result, m

    assert_same(flax_nnx, nnx, scenario)


LOOP_CHANGES = {
    "a Variable's value made a dict": lambda nnx, m: m.p.set_value({"a": m.p[...]}),
    "a Variable's value made a tuple": lambda nnx, m: m.p.set_value((m.p[...], m.p[...])),
    "a Variable's value given another dtype": lambda nnx, m: m.p.set_value(m.p[...].astype(jnp.int32)),
    "a new attribute": lambda nnx, m: setattr(m, "q", nnx.Param(jnp.ones(2))),
    "nothing": lambda nnx, m: None,
}
LOOPS = ["fori_loop, concrete bounds", "fori_loop, traced bounds", "while_loop"]


def _changing_loop(loop: str, change: Callable[[Any, Any], Any], graph: bool, graph_updates: bool) -> Any:
    """A scenario: a loop whose body applies ``change`` to its Module, made inside the traced
    call so that its trace is the loop's."""

    def scenario(nnx: Any) -> Any:
        def run(upper: Any) -> Any:
            module = nnx.Module()
            module.p = nnx.Param(jnp.ones(2))

            def step(m: Any) -> Any:
                change(nnx, m)
                return m

            options = {"graph": graph, "graph_updates": graph_updates}
            if loop == "while_loop":
                out = nnx.while_loop(lambda m: False, step, module, **options)
            else:
                out = nnx.fori_loop(0, upper, lambda i, m: step(m), module, **options)
            return out.p[...]

        return run(2) if loop == "fori_loop, concrete bounds" else jax.jit(run)(2)

    return scenario


LOOP_MODES = [(True, True), (True, False), (False, False)]


@pytest.mark.apis("fori_loop", "while_loop")
@pytest.mark.documented(None)
@given(loop=st.sampled_from(LOOPS), change=st.sampled_from(sorted(LOOP_CHANGES)), mode=st.sampled_from(LOOP_MODES))
def test_a_loop_body_that_changes_the_loop_value_is_refused_as_in_flax(
    nnx: Any, flax_nnx: Any, loop: str, change: str, mode: tuple[bool, bool]
) -> None:
    """JAX's ``TypeError`` for a changed value layout or dtype (scan's between concrete
    bounds, while_loop's otherwise); a changed graph without graph updates is nnx's error."""
    assert_same(flax_nnx, nnx, _changing_loop(loop, LOOP_CHANGES[change], *mode))


@pytest.mark.apis("fori_loop", "while_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", LOOP_MODES, ids=["graph mode with graph updates", "graph mode", "tree mode"])
@pytest.mark.parametrize("loop", LOOPS)
def test_a_loop_body_that_sets_a_variable_s_metadata_is_refused_with_flax_s_exception(
    nnx: Any, flax_nnx: Any, loop: str, mode: tuple[bool, bool]
) -> None:
    """In tree mode a Variable's metadata is part of the carry's pytree structure: JAX's
    ``TypeError`` of the loop; in graph mode without graph updates, nnx's ``ValueError``."""
    outcome = assert_same(flax_nnx, nnx, _changing_loop(loop, lambda nnx, m: m.p.set_metadata("tag", 1), *mode))
    assert outcome.error is not None or mode == (True, True), "flax refuses a loop body that sets a Variable's metadata"


JVP_GIVEN = {
    "the primals alone": lambda nnx, f, p, t: nnx.jvp(f, p, graph=False),
    "the tangents alone": lambda nnx, f, p, t: nnx.jvp(f, tangents=t, graph=False),
}


@pytest.mark.apis("jvp")
@pytest.mark.documented(None)
@pytest.mark.parametrize("given", JVP_GIVEN)
def test_jvp_given_only_primals_or_only_tangents_waits_for_both_as_flax(nnx: Any, flax_nnx: Any, given: str) -> None:
    """What it was given is dropped: the partial it returns takes the primals and tangents."""

    def scenario(nnx: Any) -> Any:
        primals, tangents = (jnp.ones(2),), (jnp.full(2, 3.0),)
        later = JVP_GIVEN[given](nnx, lambda x: (x**2).sum(), primals, tangents)
        return type(later).__name__, later(primals, tangents)

    assert_same(flax_nnx, nnx, scenario)
