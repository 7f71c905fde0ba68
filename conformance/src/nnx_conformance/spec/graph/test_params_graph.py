"""The graph functions' keywords that the other tests leave at their defaults: clone's
``arrays``, merge's ``copy``, unflatten's ``copy_variables`` and ``recreate_variables``,
flatten's ``with_paths`` and its index maps (``ref_index``, ``ref_outer_index``) with
unflatten's (``index_ref``, ``outer_index_outer_ref``), unpack's and view_info's
``graph``, reseed's ``graph`` and ``policy``, to_tree's and
from_tree's prefixes, aliasing check and non-graph nodes, and abstract_with_sharding on
abstract Variables (ShapeDtypeStructs) with sharding metadata. Each drawn call runs on
flax.nnx and the implementation and is compared result for result, identity for
identity (which objects the result shares with its input), bit for bit."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.strategies.callables import IN_GRAPH_MODE, assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph"), IN_GRAPH_MODE]


def _model(nnx: Any, seed: int) -> Any:
    """A Linear and a Dropout with Rngs of their own: Params, RngKeys and RngCounts."""
    return nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), nnx.Dropout(0.5, rngs=nnx.Rngs(seed + 1)))


class Shared(NamedTuple):
    """What a derived Linear Variable shares with the original's: the Variable, its array
    object, its array buffer."""

    variable: bool
    array: bool
    buffer: bool


def _shares(original: Any, derived: Any) -> list[Shared]:
    """For the kernel and the bias of the first layer, what ``derived`` shares with ``original``."""
    pairs = ((original.layers[0].kernel, derived.layers[0].kernel), (original.layers[0].bias, derived.layers[0].bias))
    return [
        Shared(
            a is b,
            a.get_raw_value() is b.get_raw_value(),
            a[...].unsafe_buffer_pointer() == b[...].unsafe_buffer_pointer(),
        )
        for a, b in pairs
    ]


@pytest.mark.apis("clone")
@settings(max_examples=3)
@given(arrays=st.booleans(), seed=strategies.seeds)
def test_clone_copies_arrays_as_flax_does(nnx: Any, flax_nnx: Any, arrays: bool, seed: int) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        clone = nnx.clone(model, variables=True, arrays=arrays)
        return clone, _shares(model, clone)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("split", "merge", "flatten", "unflatten")
@settings(max_examples=4)
@given(copy=st.booleans(), recreate=st.booleans(), seed=strategies.seeds)
def test_merge_and_unflatten_copy_and_recreate_variables_as_flax_does(
    nnx: Any, flax_nnx: Any, copy: bool, recreate: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        graphdef, state = nnx.split(model)
        merged = [nnx.merge(graphdef, state, copy=copy) for _ in range(2)]
        flat_graphdef, flat_state = nnx.flatten(model)
        unflattened = nnx.unflatten(flat_graphdef, flat_state, copy_variables=copy, recreate_variables=recreate)
        return (
            merged,
            _shares(model, merged[0]),
            _shares(merged[0], merged[1]),
            unflattened,
            _shares(model, unflattened),
        )

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


class Pair(NamedTuple):
    """A pytree whose flatten order (``b``, ``a``) is not its path order."""

    b: Any
    a: Any


def _unordered(nnx: Any, seed: int) -> Any:
    """A Module whose leaves do not come in path order when flattened: a Pair of Variables,
    a plain array and a scalar."""

    class Holder(nnx.Module):
        def __init__(self) -> None:
            values = strategies.layer_input((3,), seed)
            self.pair = nnx.data(Pair(nnx.Param(values[:1]), nnx.BatchStat(values[1:])))
            self.array = jnp.arange(3.0)
            self.scalar = nnx.data(seed % 7)

    return Holder()


@pytest.mark.apis("flatten", "unflatten")
@settings(max_examples=6)
@given(graph=st.booleans(), copy=st.booleans(), recreate=st.booleans(), seed=strategies.seeds)
def test_flatten_without_paths_and_unflatten_of_a_list_use_path_order_as_flax_does(
    nnx: Any, flax_nnx: Any, graph: bool, copy: bool, recreate: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        holder = _unordered(nnx, seed)
        graphdef, leaves = nnx.flatten(holder, with_paths=False, graph=graph)
        rebuilt = nnx.unflatten(graphdef, leaves, copy_variables=copy, recreate_variables=recreate)
        numbered = nnx.unflatten(graphdef, [np.float32(i) for i in range(len(leaves))], recreate_variables=recreate)
        return leaves, rebuilt, rebuilt.pair.a is holder.pair.a, numbered

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


def _parts(model: Any) -> dict[str, Any]:
    """Objects of ``_model`` that a drawn index map holds."""
    linear, dropout = model.layers
    return {"linear": linear, "kernel": linear.kernel, "stream": dropout.rngs, "count": dropout.rngs.count}


PARTS = ("count", "kernel", "linear", "stream")


@pytest.mark.apis("flatten", "unflatten")
@settings(max_examples=8)
@given(held=st.lists(st.sampled_from(PARTS), unique=True, max_size=3), start=st.integers(0, 10), seed=strategies.seeds)
def test_flatten_gives_what_ref_index_holds_as_references_and_unflatten_resolves_them_as_flax_does(
    nnx: Any, flax_nnx: Any, held: list[str], start: int, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        parts = _parts(model)
        ref_index = nnx.graphlib.RefMap()
        for offset, name in enumerate(held):
            ref_index[parts[name]] = start + offset
        graphdef, state = nnx.flatten(model, ref_index=ref_index)
        indices = [(type(obj).__name__, index) for obj, index in ref_index.items()]
        index_ref = {start + offset: parts[name] for offset, name in enumerate(held)}
        try:
            rebuilt = nnx.unflatten(graphdef, state, index_ref=index_ref)
        except RuntimeError as error:  # a new node took the index of one held
            return indices, graphdef.num_leaves, str(error)
        made = sorted((index, type(obj).__name__) for index, obj in index_ref.items())
        again, _ = nnx.flatten(model.layers[0], ref_index=ref_index)
        shared = [_parts(rebuilt)[name] is parts[name] for name in held]
        return indices, graphdef.num_leaves, [path for path, _ in state], rebuilt, shared, made, again.num_leaves

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("flatten", "unflatten")
@settings(max_examples=8)
@given(
    recorded=st.lists(st.sampled_from(PARTS), unique=True, max_size=3),
    given_back=st.sets(st.sampled_from(PARTS)),
    with_paths=st.booleans(),
    copy=st.booleans(),
    seed=strategies.seeds,
)
def test_unflatten_rebuilds_the_outer_objects_that_flatten_recorded_as_flax_does(
    nnx: Any, flax_nnx: Any, recorded: list[str], given_back: set[str], with_paths: bool, copy: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        ref_outer_index = nnx.graphlib.RefMap()
        for offset, name in enumerate(recorded):
            ref_outer_index[_parts(model)[name]] = 10 * (offset + 1)
        graphdef, state = nnx.flatten(model, ref_outer_index=ref_outer_index, with_paths=with_paths)
        outer = _model(nnx, seed + 1)
        outer_parts = _parts(outer)
        outer_index_outer_ref = {
            10 * (offset + 1): outer_parts[name] for offset, name in enumerate(recorded) if name in given_back
        }
        index_ref: dict[int, Any] = {}
        rebuilt = nnx.unflatten(
            graphdef, state, index_ref=index_ref, outer_index_outer_ref=outer_index_outer_ref, copy_variables=copy
        )
        shared = {
            name: (_parts(rebuilt)[name] is outer_parts[name], _parts(rebuilt)[name] is _parts(model)[name])
            for name in PARTS
        }
        made = sorted((index, type(obj).__name__) for index, obj in index_ref.items())
        return graphdef == nnx.flatten(model)[0], len(ref_outer_index), rebuilt, outer, shared, made

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


OUTER_MISMATCHES = {
    "a node of another type": ("linear", lambda nnx, parts: parts["stream"]),
    "a node in a Variable's place": ("kernel", lambda nnx, parts: parts["linear"]),
    "a Variable of another type": ("kernel", lambda nnx, parts: nnx.BatchStat(jnp.zeros(4))),
}


@pytest.mark.apis("flatten", "unflatten")
@pytest.mark.parametrize("case", OUTER_MISMATCHES, ids=list(OUTER_MISMATCHES))
@settings(max_examples=2)
@given(seed=strategies.seeds)
def test_unflatten_checks_the_outer_objects_it_is_given_as_flax_does(
    nnx: Any, flax_nnx: Any, case: str, seed: int
) -> None:
    name, replacement = OUTER_MISMATCHES[case]

    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        ref_outer_index = nnx.graphlib.RefMap()
        ref_outer_index[_parts(model)[name]] = 7
        graphdef, state = nnx.flatten(model, ref_outer_index=ref_outer_index)
        given = replacement(nnx, _parts(_model(nnx, seed + 1)))
        rebuilt = nnx.unflatten(graphdef, state, outer_index_outer_ref={7: given})
        return rebuilt, _parts(rebuilt)[name] is given

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("unpack", "view_info")
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "tree"])
@settings(max_examples=2)
@given(seed=strategies.seeds)
def test_unpack_and_view_info_in_either_mode_act_as_in_flax(nnx: Any, flax_nnx: Any, graph: bool, seed: int) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), nnx.BatchNorm(3, rngs=nnx.Rngs(seed)))
        params, stats = nnx.unpack(model, nnx.Param, nnx.BatchStat, graph=graph)
        return dict(params), dict(stats), str(nnx.view_info(model, graph=graph))

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


def _stacked_keys(path: tuple[Any, ...], key: Any, shape: tuple[int, ...]) -> Any:
    """A reseed ``policy``: one key per element of the stream's key array."""
    return jax.random.split(key, shape)


POLICIES = {"scalars only": "scalars_only", "match shape": "match_shape", "a function": _stacked_keys}


@pytest.mark.apis("reseed", "vmap")
@pytest.mark.parametrize("policy", POLICIES, ids=list(POLICIES))
@settings(max_examples=3)
@given(graph=st.booleans(), seed=strategies.seeds, new_seed=strategies.seeds)
def test_reseed_of_stacked_streams_follows_its_policy_as_in_flax(
    nnx: Any, flax_nnx: Any, policy: str, graph: bool, seed: int, new_seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        single = nnx.Dropout(0.5, rngs=nnx.Rngs(seed))
        nnx.reseed(single, graph=graph, policy=POLICIES[policy], default=new_seed)
        make = nnx.vmap(lambda key: nnx.Dropout(0.5, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)
        stacked = make(jax.random.split(jax.random.key(seed), 3))
        try:
            nnx.reseed(stacked, graph=graph, policy=POLICIES[policy], default=new_seed)
        except ValueError as error:  # "scalars_only" refuses a stack of keys, naming the other policies
            return single, type(error).__name__, "match_shape" in str(error)
        return single, stacked

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("to_tree", "from_tree")
@settings(max_examples=4)
@given(
    prefix=st.sampled_from([0, None]),
    map_non_graph_nodes=st.booleans(),
    check_aliasing=st.booleans(),
    is_inner=st.sampled_from([None, False]),
    seed=strategies.seeds,
)
def test_to_tree_and_from_tree_options_act_as_in_flax(
    nnx: Any, flax_nnx: Any, prefix: Any, map_non_graph_nodes: bool, check_aliasing: bool, is_inner: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        tree = (_model(nnx, seed), nnx.Linear(3, 2, rngs=nnx.Rngs(seed + 2)), jnp.ones(2))
        prefixes = (prefix, prefix, None)
        flat = nnx.to_tree(
            tree, prefix=prefixes, map_non_graph_nodes=map_non_graph_nodes, check_aliasing=check_aliasing
        )
        back = nnx.from_tree(flat, prefix=prefixes, map_non_graph_nodes=map_non_graph_nodes, is_inner=is_inner)
        return jax.tree.leaves(flat), back

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("to_tree", "from_tree")
@settings(max_examples=2)
@given(seed=strategies.seeds)
def test_to_tree_without_an_aliasing_check_gives_a_shared_variable_one_leaf_as_flax_does(
    nnx: Any, flax_nnx: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        model = _model(nnx, seed)
        flat = nnx.to_tree((model, model.layers[0]), check_aliasing=False)
        back = nnx.from_tree(flat)
        return jax.tree.leaves(flat), back, back[1] is back[0].layers[0]

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


def _abstract_param(nnx: Any, shape: tuple[int, ...], names: tuple[str | None, ...] | None, mesh: Any) -> Any:
    """A Param holding a ShapeDtypeStruct without a sharding; sharded by ``names`` on ``mesh``, if given."""
    spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    if names is None:
        return nnx.Param(spec, eager_sharding=False)
    return nnx.Param(spec, out_sharding=names, mesh=mesh, eager_sharding=False)


@pytest.mark.apis("abstract_with_sharding")
@settings(max_examples=4)
@given(
    graph=st.sampled_from([True, False, None]),
    names=st.sampled_from([(None, "model"), ("model", None), (None, None)]),
    rows=st.integers(1, 3),
)
def test_abstract_with_sharding_gives_abstract_variables_the_shardings_flax_gives(
    nnx: Any, flax_nnx: Any, graph: Any, names: tuple[str | None, ...], rows: int
) -> None:
    mesh = jax.make_mesh((1,), ("model",))

    def scenario(nnx: Any) -> Any:
        class Abstract(nnx.Module):
            def __init__(self) -> None:
                self.kernel = _abstract_param(nnx, (rows, 3), names, mesh)
                self.bias = _abstract_param(nnx, (3,), None, mesh)

        module = nnx.abstract_with_sharding(Abstract(), graph=graph)
        tree = nnx.abstract_with_sharding({"kernel": _abstract_param(nnx, (rows, 3), names, mesh)})
        return [
            (leaf.shape, str(leaf.dtype), str(leaf.sharding)) for leaf in jax.tree.leaves((nnx.state(module), tree))
        ]

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
