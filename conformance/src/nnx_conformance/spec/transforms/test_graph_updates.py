"""Parity of the lifted transforms with flax.nnx in graph mode: structural changes made
inside jit, vmap, remat, scan and custom_vjp (swapped Variables, new static attributes,
self-references, new submodules) propagate out as flax propagates them, and the global
graph-mode switches combine with a transform's own ``graph`` / ``graph_updates`` as in flax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

TRANSFORMS_GUIDE = "guide:transforms (graph updates: changes to Modules inside transforms propagate out)"


def _pair(nnx: Any) -> Any:
    return gs.classes(nnx).node(a=nnx.Param(jnp.ones(2)), b=nnx.Param(jnp.zeros(2)), z=nnx.BatchStat(jnp.zeros(())))


def _swap(nnx: Any, m: Any) -> Any:
    m.a, m.b = m.b, m.a
    m.z[...] += 1
    return m.a[...].sum()


def _grow(nnx: Any, m: Any) -> Any:
    m.flag = "on"
    m.me = m
    m.sub = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
    return m.a[...].sum()


def _lift(nnx: Any, transform: str, change: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """``change`` wrapped in ``nnx.<transform>`` in graph mode with graph updates."""
    if transform == "jit":
        return nnx.jit(lambda m: change(nnx, m), graph=True, graph_updates=True)
    if transform == "vmap":
        lifted = nnx.vmap(lambda m, x: change(nnx, m) + x, in_axes=(None, 0), graph=True, graph_updates=True)
        return lambda m: lifted(m, jnp.ones(2))
    if transform == "remat":
        return nnx.remat(lambda m: change(nnx, m), graph=True, graph_updates=True)
    if transform == "scan":

        def step(m: Any, x: Any) -> Any:
            change(nnx, m)
            return m, x

        scanned = nnx.scan(step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), graph=True, graph_updates=True)
        return lambda m: scanned(m, jnp.ones(1))
    if transform == "custom_vjp":
        f = nnx.custom_vjp(lambda m: change(nnx, m), graph=True, graph_updates=True)
        f.defvjp(lambda m: (f(m), None), lambda res, g: g)
        return f
    raise AssertionError(f"unknown transform {transform!r}")


@pytest.mark.apis("jit", "vmap", "remat", "scan", "custom_vjp")
@pytest.mark.documented(TRANSFORMS_GUIDE)
@pytest.mark.parametrize("transform", ["jit", "vmap", "remat", "scan", "custom_vjp"])
def test_swapped_variables_inside_a_transform_are_swapped_after_it(nnx: Any, flax_nnx: Any, transform: str) -> None:
    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        old_a, old_b = m.a, m.b
        _lift(nnx, transform, _swap)(m)
        return m, m.a is old_b, m.b is old_a

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.result[1][1:] == [("bool", True), ("bool", True)], "flax swaps the Variables themselves"


@pytest.mark.apis("jit", "vmap", "remat", "scan", "custom_vjp")
@pytest.mark.documented(TRANSFORMS_GUIDE)
@pytest.mark.parametrize("transform", ["jit", "vmap", "remat", "scan", "custom_vjp"])
def test_new_attributes_and_submodules_made_inside_a_transform_appear_after_it(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    """In scan, where they change the carry's structure, flax refuses them with JAX's
    TypeError; elsewhere they appear on the caller's Module."""

    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        _lift(nnx, transform, _grow)(m)
        return m, m.me is m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, False)],
    ids=["graph mode with graph updates", "graph mode without graph updates", "tree mode"],
)
def test_jit_gives_every_variable_a_new_array_exactly_where_flax_does(
    nnx: Any, flax_nnx: Any, mode: tuple[bool, bool]
) -> None:
    """With graph updates flax writes each input Variable back from the compiled function's
    outputs, so a Variable the call left alone holds a new array object too; without them
    only the updated Variables do. Three calls: the first traces, the later ones may be cached."""

    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        f = nnx.jit(
            lambda m: (m.z.__setitem__(..., m.z[...] + 1), m.a[...].sum())[1], graph=mode[0], graph_updates=mode[1]
        )
        kept = []
        for _ in range(3):
            before = m.a[...], m.z[...]
            f(m)
            kept.append((m.a[...] is before[0], m.z[...] is before[1]))
        return m, kept

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page (jit: donate_argnums and donate_argnames for a model and an optimizer)")
@pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, False)],
    ids=["graph mode with graph updates", "graph mode without graph updates", "tree mode"],
)
@pytest.mark.parametrize("donation", ["donate_argnums=0", "donate_argnames='m' by keyword"])
def test_jit_donating_a_module_writes_every_donated_variable_back_as_flax(
    nnx: Any, flax_nnx: Any, mode: tuple[bool, bool], donation: str
) -> None:
    """A donated Module's arrays are gone after the call, so each of its Variables holds
    the compiled function's output, updated or not; a second call runs on them."""

    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        by_keyword = donation.endswith("by keyword")
        options = {"donate_argnames": "m"} if by_keyword else {"donate_argnums": 0}

        def bump(m: Any, x: Any) -> Any:
            m.z[...] += 1
            return m.a[...].sum() + x

        f = nnx.jit(bump, graph=mode[0], graph_updates=mode[1], **options)
        kept = m.a[...]
        outs = [f(m=m, x=jnp.ones(())) if by_keyword else f(m, jnp.ones(())) for _ in range(2)]
        return outs, m, m.a[...] is kept

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax runs a jit donating its Module twice: {outcome.error!r}"


@pytest.mark.apis("jit")
@pytest.mark.documented(
    "jit docstring (donate_argnums: without donate_argnums, inspect.signature finds the positional "
    "arguments that correspond to donate_argnames)"
)
@pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, False)],
    ids=["graph mode with graph updates", "graph mode without graph updates", "tree mode"],
)
def test_jit_donate_argnames_donates_an_argument_passed_positionally_as_donate_argnums_does(
    nnx: Any, mode: tuple[bool, bool]
) -> None:
    """The documented ``donate_argnames=("model", ...)`` with the model passed positionally:
    each call's outputs and the Module's values after it are those of ``donate_argnums=0``,
    and no Variable is left on a deleted array."""

    def run(options: dict[str, Any]) -> list[Any]:
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        m.z = nnx.BatchStat(jnp.zeros(()))

        def bump(m: Any, x: Any) -> Any:
            m.z[...] += 1
            return m(x)

        f = nnx.jit(bump, graph=mode[0], graph_updates=mode[1], **options)
        seen = []
        for _ in range(2):
            out = f(m, jnp.ones((1, 2)))
            deleted = [
                path for path, v in nnx.iter_graph(m) if isinstance(v, nnx.Variable) and v.get_raw_value().is_deleted()
            ]
            assert not deleted, (
                f"donate_argnames with the Module passed positionally leaves {deleted} on deleted arrays"
            )
            seen.append((out.tolist(), m.kernel[...].tolist(), m.bias[...].tolist(), m.z[...].tolist()))
        return seen

    by_name, by_number = run({"donate_argnames": "m"}), run({"donate_argnums": 0})
    assert by_name == by_number, (
        f"donate_argnames='m' with the Module passed positionally gives {by_name}, donate_argnums=0 gives {by_number}"
    )


def _tag(nnx: Any, transform: str, mode: tuple[bool, bool]) -> Callable[[Any], Any]:
    """A call of ``nnx.<transform>`` whose function sets, changes and deletes metadata of
    the input Module's Variables (and updates one of them)."""

    def tag(m: Any) -> Any:
        m.a.set_metadata("tag", "set")
        m.b.set_metadata(note="b")
        m.b.del_metadata("eager_sharding")
        m.z[...] += 1
        m.z.set_metadata("tag", "on an updated Variable")
        return (m.a[...] ** 2).sum()

    return _transformed(nnx, transform, mode, tag)


def _transformed(nnx: Any, transform: str, mode: tuple[bool, bool], fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` (Module -> scalar) under ``nnx.<transform>`` in ``mode`` (graph, graph_updates)."""
    options = {"graph": mode[0], "graph_updates": mode[1]}
    if transform == "jit":
        return nnx.jit(fn, **options)
    if transform == "grad":
        return nnx.grad(fn, **options)
    if transform == "remat":
        return nnx.remat(fn, **options)
    if transform == "vmap":
        mapped = nnx.vmap(lambda m, x: fn(m) + x, in_axes=(None, 0), **options)
        return lambda m: mapped(m, jnp.ones(2))
    if transform == "cond":
        return lambda m: nnx.cond(True, fn, fn, m, **options)
    if transform == "eval_shape":
        return lambda m: nnx.eval_shape(fn, m, **options)
    raise AssertionError(f"unknown transform {transform!r}")


MODES = pytest.mark.parametrize(
    "mode",
    [(True, True), (True, False), (False, False)],
    ids=["graph mode with graph updates", "graph mode without graph updates", "tree mode"],
)


@pytest.mark.apis("jit", "grad", "remat", "vmap", "cond", "eval_shape")
@pytest.mark.documented(None)
@pytest.mark.parametrize("mode", [(True, False), (False, False)], ids=["graph mode without graph updates", "tree mode"])
@pytest.mark.parametrize("transform", ["jit", "grad", "remat", "vmap", "cond", "eval_shape"])
def test_metadata_set_inside_a_transform_reaches_the_caller_s_variables_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: tuple[bool, bool]
) -> None:
    """Without graph updates, metadata a transformed function sets or deletes on the input
    Variables is theirs after the call (eval_shape aside, which writes nothing back). With
    graph updates flax 0.12.12 writes it back in some calls and not in others (jit, remat
    and cond drop it where the call also updates a value), which the property test below
    holds against the graph_updates documentation."""

    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        _tag(nnx, transform, mode)(m)
        return [v.get_metadata() for v in (m.a, m.b, m.z)]

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax runs {transform} over a function that sets metadata: {outcome.error!r}"


@pytest.mark.kind("property")
@pytest.mark.apis("jit", "grad", "remat", "vmap", "cond")
@pytest.mark.documented(
    "api transforms page (graph_updates: propagates updates on graph structure that happen inside the transform)"
)
@MODES
@pytest.mark.parametrize("transform", ["jit", "grad", "remat", "vmap", "cond"])
def test_metadata_set_inside_a_transform_reaches_the_caller_on_every_call(
    nnx: Any, transform: str, mode: tuple[bool, bool]
) -> None:
    """The second and third calls of one transformed function, which may reuse the first
    call's trace, write the metadata back as the first does."""
    f = _tag(nnx, transform, mode)
    for call in range(3):
        m = _pair(nnx)
        f(m)
        tags = [m.a.get_metadata().get("tag"), m.z.get_metadata().get("tag")]
        assert tags == ["set", "on an updated Variable"], (
            f"call {call + 1} of {transform} leaves the tags the function set on the caller's Variables; got {tags}"
        )


@pytest.mark.apis("jit", "set_graph_mode")
@pytest.mark.documented(None)
def test_jit_graph_true_under_global_tree_mode_accepts_a_shared_param(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        p = nnx.Param(jnp.ones(2))
        m = gs.classes(nnx).node(a=p, b=p)
        with nnx.set_graph_mode(False):

            @nnx.jit(graph=True)
            def f(m: Any) -> Any:
                m.a[...] += 1
                return m.b[...] * 2

            y = f(m)
        return y, m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("grad")
@pytest.mark.documented(None)
def test_grad_without_graph_updates_returns_the_module_type_with_the_shared_leaf_at_each_path(
    nnx: Any, flax_nnx: Any
) -> None:
    def scenario(nnx: Any) -> Any:
        p = nnx.Param(jnp.ones(2))
        m = gs.classes(nnx).node(a=p, b=p)
        grads = nnx.grad(lambda m: (m.a[...] * 3).sum(), graph=True, graph_updates=False)(m)
        return grads, m

    assert_same(flax_nnx, nnx, scenario)


def _bump_shared(nnx: Any, transform: str) -> Callable[[Any], Any]:
    """A call of ``nnx.<transform>`` in graph mode without graph updates whose function
    writes the Variable its Module holds twice and another one."""

    def bump(m: Any) -> Any:
        m.a[...] = m.a[...] * 2 + 1
        m.z[...] += 1
        return m

    options = {"graph": True, "graph_updates": False}
    if transform == "jit":
        return nnx.jit(lambda m: bump(m).a[...].sum(), **options)
    if transform == "remat":
        return nnx.remat(lambda m: bump(m).a[...].sum(), **options)
    if transform == "grad":
        return nnx.grad(lambda m: bump(m).a[...].sum(), **options)
    if transform == "fori_loop":
        return lambda m: nnx.fori_loop(0, 3, lambda i, m: bump(m), m, **options)
    if transform == "while_loop":
        return lambda m: nnx.while_loop(lambda m: m.z[...] < 2, bump, m, **options)
    raise AssertionError(f"unknown transform {transform!r}")


@pytest.mark.apis("jit", "remat", "grad", "fori_loop", "while_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("transform", ["jit", "remat", "grad", "fori_loop", "while_loop"])
def test_without_graph_updates_writes_to_a_variable_held_twice_are_kept_as_by_flax(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    def scenario(nnx: Any) -> Any:
        p = nnx.Param(jnp.ones(2))
        m = gs.classes(nnx).node(a=p, b=p, z=nnx.BatchStat(jnp.zeros(())))
        result = _bump_shared(nnx, transform)(m)
        return result, m, m.a is m.b

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax runs {transform} over a Module holding a Variable twice: {outcome.error!r}"


@pytest.mark.apis("fori_loop", "while_loop")
@pytest.mark.documented(None)
@pytest.mark.parametrize("loop", ["fori_loop", "while_loop"])
@pytest.mark.parametrize("written", ["a", "b"])
def test_a_tree_mode_loop_takes_a_variable_held_twice_as_two_as_flax_does(
    nnx: Any, flax_nnx: Any, loop: str, written: str
) -> None:
    """Where other tree-mode transforms refuse a shared Variable, flax's loops carry each
    place on its own and write the places back in order, so a write through the first is lost."""

    def scenario(nnx: Any) -> Any:
        p = nnx.Param(jnp.ones(2))
        m = gs.classes(nnx).node(a=p, b=p, z=nnx.BatchStat(jnp.zeros(())))

        def bump(m: Any) -> Any:
            getattr(m, written)[...] += 1
            m.z[...] += 1
            return m

        if loop == "fori_loop":
            result = nnx.fori_loop(0, 3, lambda i, m: bump(m), m, graph=False)
        else:
            result = nnx.while_loop(lambda m: m.z[...] < 2, bump, m, graph=False)
        return result, m, result is m, result.a is p, result.b is p

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax runs {loop} over a Module holding a Variable twice: {outcome.error!r}"


@pytest.mark.apis("vmap", "split_rngs")
@pytest.mark.documented("guide:transforms (vmap over __init__ with split_rngs creates a stack of Modules)")
def test_vmapped_init_with_split_rngs_makes_stacked_submodules(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        class Block(nnx.Module):
            @nnx.split_rngs(splits=3)
            @nnx.vmap(in_axes=(0, 0))
            def __init__(self, rngs: Any) -> None:
                self.lin = nnx.Linear(2, 3, rngs=rngs)
                self.bn = nnx.BatchNorm(3, rngs=rngs)

        rngs = nnx.Rngs(0)
        return Block(rngs), rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit", "grad", "remat", "vmap", "cond", "eval_shape", "Variable.set_metadata")
@pytest.mark.documented(None)
@MODES
@pytest.mark.parametrize("transform", ["jit", "grad", "remat", "vmap", "cond", "eval_shape"])
def test_metadata_set_to_an_equal_value_inside_a_transform_leaves_the_caller_s_as_it_was(
    nnx: Any, flax_nnx: Any, transform: str, mode: tuple[bool, bool]
) -> None:
    """An entry set to an equal (not the same) value is no change: the caller's Variable
    keeps its value object and its key order, as flax's."""

    def scenario(nnx: Any) -> Any:
        m = _pair(nnx)
        m.a.set_metadata("tag", tuple([1, 2]))  # noqa: C409 - a new tuple each time: equal, not the same
        before = m.a.get_metadata("tag")

        def retag(m: Any) -> Any:
            m.a.set_metadata("tag", tuple([1, 2]))  # noqa: C409 - not the constant above
            return (m.a[...] ** 2).sum()

        _transformed(nnx, transform, mode, retag)(m)
        return m.a.get_metadata("tag") is before, list(m.a.get_metadata())

    assert_same(flax_nnx, nnx, scenario)
