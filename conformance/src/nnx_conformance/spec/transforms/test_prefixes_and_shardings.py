"""Differential tests of the transform prefixes: ``DiffState`` as ``grad``'s ``argnums``,
``nnx.prefix`` over a model, and ``StateSharding`` built from ``get_named_sharding`` as
``jit``'s shardings give flax's results; ``StateAxes``, ``StateSharding`` and ``DiffState``
compare, hash and read (a StateAxes as a Mapping) as flax's; a StateAxes built from a State
selects exactly the paths of that State."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms/prefixes")]

AXIS = "model"
FILTERS = ["Param", "BatchStat", "kernel", "bias", "everything"]
"""Filters drawn for DiffState and prefix, by name: a Variable type, a path part, or ``...``."""


def _filter(nnx: Any, name: str) -> Any:
    return {"Param": nnx.Param, "BatchStat": nnx.BatchStat, "everything": ...}.get(name) or nnx.PathContains(name)


def _model(nnx: Any, seed: int) -> Any:
    """A Linear followed by a BatchNorm."""
    rngs = nnx.Rngs(seed)
    return nnx.Sequential(nnx.Linear(3, 2, rngs=rngs), nnx.BatchNorm(2, rngs=rngs))


@pytest.mark.apis("DiffState", "grad")
@given(seed=st.integers(0, 2**16), wrt=st.sampled_from(FILTERS), graph_updates=st.booleans(), has_aux=st.booleans())
def test_grad_over_a_diff_state_differentiates_what_its_filter_selects_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, wrt: str, graph_updates: bool, has_aux: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)

        def loss(model: Any, x: Any) -> Any:
            value = jnp.sum(model(x) ** 2)
            return (value, value * 2) if has_aux else value

        diff_state = nnx.DiffState(0, _filter(nnx, wrt))
        grads = nnx.grad(loss, argnums=diff_state, has_aux=has_aux, graph=True, graph_updates=graph_updates)(model, x)
        return (diff_state.argnum, grads, nnx.state(model))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("prefix")
@given(seed=st.integers(0, 2**16), selected=st.sampled_from(FILTERS), axis=st.integers(0, 1), graph=st.booleans())
def test_prefix_puts_each_filter_value_at_the_leaves_it_selects_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, selected: str, axis: int, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        prefixes = nnx.prefix(model, {_filter(nnx, selected): axis, ...: None}, graph=graph)
        return jax.tree.leaves(prefixes, is_leaf=lambda leaf: leaf is None), jax.tree.structure(prefixes).num_leaves

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.multi_device
@pytest.mark.graph_mode("graph")  # StateSharding prefixes need graph mode with graph updates
@pytest.mark.apis("StateSharding", "get_named_sharding")
@given(seed=st.integers(0, 2**16), kernel_axis=st.sampled_from([0, 1]), shard_bias=st.booleans())
def test_state_sharding_from_named_shardings_places_a_jitted_model_as_flax(
    nnx: Any, flax_nnx: Any, seed: int, kernel_axis: int, shard_bias: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        devices = len(jax.devices())
        mesh = jax.sharding.Mesh(jax.devices(), (AXIS,))
        kernel_names = (AXIS, None) if kernel_axis == 0 else (None, AXIS)
        with nnx.use_eager_sharding(False):
            model = nnx.Linear(
                devices,
                2 * devices,
                rngs=nnx.Rngs(seed),
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_names),
                bias_init=nnx.with_partitioning(nnx.initializers.normal(), (AXIS if shard_bias else None,)),
            )
        named = nnx.get_named_sharding(nnx.state(model), mesh)
        specs = [(str(path), str(leaf.get_value().spec)) for path, leaf in nnx.to_flat_state(named)]
        shardings = nnx.StateSharding(named)
        forward = nnx.jit(
            lambda m, x: (m, m(x)),
            in_shardings=(shardings, NamedSharding(mesh, P())),
            out_shardings=(shardings, NamedSharding(mesh, P())),
        )
        _, y = forward(model, jnp.ones((2, devices)))
        placed = [str(getattr(model, name)[...].sharding.spec) for name in ("kernel", "bias")]
        return specs, placed, y

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.multi_device
@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@given(
    spec=st.sampled_from([P(AXIS), P()]),
    with_out_shardings=st.booleans(),
    mode=st.sampled_from([{}, {"graph": False}, {"graph": True, "graph_updates": False}]),
)
def test_state_a_jitted_function_writes_lands_on_the_in_shardings_of_its_input_as_in_flax(
    nnx: Any, flax_nnx: Any, spec: P, with_out_shardings: bool, mode: dict[str, bool]
) -> None:
    """A Variable given new values made inside (no input sharding to follow) keeps its
    argument's in_shardings, whether out_shardings is given or not; so does the output."""

    def scenario(nnx: Any) -> Any:
        devices = len(jax.devices())
        mesh = jax.sharding.Mesh(jax.devices(), (AXIS,))
        model = nnx.Dict(w=nnx.Param(jnp.ones(devices)), count=nnx.BatchStat(jnp.ones(devices)))

        def write(m: Any) -> Any:
            m.w[...] = jnp.arange(float(devices))
            m.count[...] = jnp.zeros(devices)
            return jnp.zeros(devices)

        out_shardings = NamedSharding(mesh, P()) if with_out_shardings else None
        out = nnx.jit(write, in_shardings=(NamedSharding(mesh, spec),), out_shardings=out_shardings, **mode)(model)
        return [str(array.sharding) for array in (model.w[...], model.count[...], out)]

    assert_same(flax_nnx, nnx, scenario)


PREFIX_FILTERS = ["Param", "BatchStat", "a", "b", "Param or a", "PathContains(a)", "Not(Param)", "everything"]
"""Filters drawn for the prefix objects compared, by name (all hashable)."""
PREFIX_KINDS = ["StateAxes", "StateSharding", "DiffState"]

Recipe = tuple[str, tuple[tuple[int, int], ...]]
"""A prefix object to build: its kind and its (filter, value) pairs as indices into
PREFIX_FILTERS and the kind's values (a DiffState takes its first pair: filter, argnum)."""


def _prefix_filter(nnx: Any, name: str) -> Any:
    special = {
        "Param or a": (nnx.Param, "a"),
        "PathContains(a)": nnx.PathContains("a"),
        "Not(Param)": nnx.Not(nnx.Param),
    }
    return special[name] if name in special else _filter(nnx, name)


def _prefix_object(nnx: Any, recipe: Recipe) -> Any:
    kind, pairs = recipe
    if kind == "DiffState":
        filter_index, argnum = pairs[0] if pairs else (0, 0)
        return nnx.DiffState(argnum, _prefix_filter(nnx, PREFIX_FILTERS[filter_index]))
    values = [0, 1, None, nnx.Carry] if kind == "StateAxes" else [P(AXIS), P(None, AXIS), P(), None]
    return getattr(nnx, kind)([(_prefix_filter(nnx, PREFIX_FILTERS[f]), values[v]) for f, v in pairs])


_pairs = st.lists(st.tuples(st.integers(0, len(PREFIX_FILTERS) - 1), st.integers(0, 3)), max_size=3).map(tuple)
_recipes = st.tuples(st.sampled_from(PREFIX_KINDS), _pairs)


@st.composite
def _recipe_pairs(draw: st.DrawFn) -> tuple[Recipe, Recipe]:
    """Two recipes: the same, or the first changed in one way (kind, a filter, a value, the
    order of its pairs, one pair fewer), or another drawn on its own."""
    kind, pairs = first = draw(_recipes)
    change = draw(st.sampled_from(["same", "kind", "filter", "value", "order", "fewer", "other"]))
    at = draw(st.integers(0, max(len(pairs) - 1, 0)))
    replaced = draw(st.integers(0, len(PREFIX_FILTERS) - 1))
    if change == "kind":
        return first, (draw(st.sampled_from([k for k in PREFIX_KINDS if k != kind])), pairs)
    if change in ("filter", "value") and pairs:
        f, v = pairs[at]
        pair = (replaced, v) if change == "filter" else (f, (v + 1 + replaced % 3) % 4)
        return first, (kind, (*pairs[:at], pair, *pairs[at + 1 :]))
    if change == "order":
        return first, (kind, pairs[::-1])
    if change == "fewer":
        return first, (kind, pairs[:at] + pairs[at + 1 :])
    return first, first if change == "same" else draw(_recipes)


@pytest.mark.apis("StateAxes", "StateSharding")
@pytest.mark.documented(None)
@pytest.mark.parametrize("kind", ["StateAxes", "StateSharding"])
@pytest.mark.parametrize("values", [(0, 1), (1, 0), (None, 0), (0, 0)], ids=["0-1", "1-0", "None-0", "0-0"])
def test_prefix_objects_with_one_filter_and_other_values_compare_as_flax(
    nnx: Any, flax_nnx: Any, kind: str, values: tuple[Any, Any]
) -> None:
    def scenario(nnx: Any) -> Any:
        first, second = (getattr(nnx, kind)({nnx.Param: value, ...: None}) for value in values)
        return first == second, second == first

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("StateAxes", "StateSharding", "DiffState")
@given(recipes=_recipe_pairs())
def test_prefix_objects_compare_and_hash_as_flax(nnx: Any, flax_nnx: Any, recipes: tuple[Recipe, Recipe]) -> None:
    def scenario(nnx: Any) -> Any:
        first, second = (_prefix_object(nnx, recipe) for recipe in recipes)
        return {
            "==": first == second,
            "!=": first != second,
            "== reversed": second == first,
            "equal hashes": hash(first) == hash(second),
        }

    assert_same(flax_nnx, nnx, scenario)


OUT_STATE_AXES = {
    "everything broadcast": lambda nnx: nnx.StateAxes({...: None}),
    "everything mapped": lambda nnx: nnx.StateAxes({...: 0}),
    "params mapped, the rest broadcast": lambda nnx: nnx.StateAxes({nnx.Param: 0, ...: None}),
    "a plain axis": lambda nnx: 0,
}


@pytest.mark.graph_mode("graph")  # StateAxes need graph mode with graph updates; tree mode refuses them first
@pytest.mark.apis("vmap", "StateAxes")
@pytest.mark.documented(None)
@given(
    out=st.sampled_from(sorted(OUT_STATE_AXES)),
    in_state_axes=st.booleans(),
    adds_a_cache=st.booleans(),
)
def test_a_module_vmap_returns_under_state_axes_is_stacked_as_by_flax(
    nnx: Any, flax_nnx: Any, out: str, in_state_axes: bool, adds_a_cache: bool
) -> None:
    """A Module made inside ``vmap`` comes out stacked or broadcast by the StateAxes of
    ``out_axes``; a Variable the body adds to an input Module that its ``in_axes``
    StateAxes does not cover is a ValueError naming its path."""

    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

        def body(model: Any, x: Any) -> Any:
            if adds_a_cache:
                model.cache = nnx.Cache(jnp.zeros(2))
            return nnx.Linear(2, 2, rngs=nnx.Rngs(1)), model(x)

        in_axes = (nnx.StateAxes({nnx.Param: None}) if in_state_axes else None, 0)
        made, y = nnx.vmap(body, in_axes=in_axes, out_axes=(OUT_STATE_AXES[out](nnx), 0))(model, jnp.ones((3, 2)))
        return made, y, model

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("cache",) if in_state_axes and adds_a_cache else ())
    assert (outcome.error is None) == (not (in_state_axes and adds_a_cache)), (
        f"flax's vmap with out_axes {out}: {outcome.error!r}"
    )


MAPPING_READS = {
    "whether it is a Mapping": lambda p: isinstance(p, Mapping),
    "its keys": lambda p: list(p.keys()),
    "its values": lambda p: list(p.values()),
    "its items": lambda p: list(p.items()),
    "its length": len,
    "its iteration": list,
    "its filters": lambda p: list(p.filters),
    "its first filter's value": lambda p: p[p.filters[0]],
    "a key that is not one of its filters": lambda p: p["not a filter"],
    "a key that is not one of its filters, with get": lambda p: p.get("not a filter", 1),
    "its repr, classes by name": lambda p: re.sub(r"<class '[\w.]+\.(\w+)'>", r"\1", repr(p)),
}


@pytest.mark.apis("StateAxes", "StateSharding", "DiffState")
@pytest.mark.documented(None)
@given(recipe=_recipes, read=st.sampled_from(sorted(MAPPING_READS)))
def test_prefix_objects_read_as_mappings_as_in_flax(nnx: Any, flax_nnx: Any, recipe: Recipe, read: str) -> None:
    """A StateAxes is a read-only Mapping from its filters to its axes (a repeated filter
    kept in ``items``; a key that is not a filter a ValueError); the other prefix objects
    are not Mappings."""
    assert_same(flax_nnx, nnx, lambda nnx: MAPPING_READS[read](_prefix_object(nnx, recipe)))


STATE_PATHS = [("a",), ("b",), ("n", "c"), ("n", "d")]
"""The Variable paths of :func:`_lettered`'s Module, in the order flax flattens them."""


def _lettered(nnx: Any) -> Any:
    """A Module with Params at ``a``, ``b``, ``n.c`` and a BatchStat at ``n.d``, each (3,)."""
    module = nnx.Module()
    module.a, module.b = nnx.Param(jnp.arange(3.0)), nnx.Param(jnp.ones(3))
    module.n = nnx.Module()
    module.n.c, module.n.d = nnx.Param(jnp.full(3, 2.0)), nnx.BatchStat(jnp.zeros(3))
    return module


@pytest.mark.apis("StateAxes", "prefix", "vmap")
@pytest.mark.documented(None)
@given(
    axes=st.lists(st.sampled_from([0, None, "absent"]), min_size=len(STATE_PATHS), max_size=len(STATE_PATHS)),
    use=st.sampled_from(["vmap", "prefix in graph mode", "prefix in tree mode"]),
)
def test_a_state_axes_built_from_a_state_selects_exactly_its_paths_as_in_flax(
    nnx: Any, flax_nnx: Any, axes: list[int | str | None], use: str
) -> None:
    """Each path of the State gets its axis; a Variable at a path the State lacks (whether
    it sorts before or after the State's paths) is a ValueError, as no filter selects it."""

    def scenario(nnx: Any) -> Any:
        module = _lettered(nnx)
        by_path = {path: axis for path, axis in zip(STATE_PATHS, axes) if axis != "absent"}
        state_axes = nnx.StateAxes(nnx.State.from_flat_path(by_path))
        if use == "vmap":

            def total(m: Any, x: Any) -> Any:
                return x * (m.a[...] + m.b[...] + m.n.c[...] + m.n.d[...])

            return nnx.vmap(total, in_axes=(state_axes, 0), axis_size=3)(module, jnp.ones(3))
        prefixes = nnx.prefix(module, state_axes, graph=use.endswith("graph mode"))
        return jax.tree.leaves(prefixes, is_leaf=lambda leaf: leaf is None)

    assert_same(flax_nnx, nnx, scenario)
