"""Parity of the graph utilities with flax.nnx: the same call on the same small model
gives the same described result, the same warnings, or flax's exception type."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.layer_cases import Leaf, flat_leaves, flat_state

pytestmark = pytest.mark.kind("differential")

GRAPH_MODES = st.sampled_from([None, True, False])


def _model(nnx: Any, seed: int) -> Any:
    """A block with a Linear shared under two attributes, a BatchNorm and a Dropout."""

    class Block(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.linear = nnx.Linear(2, 3, rngs=rngs)
            self.shared = self.linear
            self.norm = nnx.BatchNorm(3, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

    return Block(nnx.Rngs(seed, dropout=seed + 1))


def _state_of(nnx: Any, node: Any) -> list[Leaf]:
    return flat_state(nnx, node)


@pytest.mark.apis("graphdef")
@given(seed=strategies.seeds, graph=GRAPH_MODES)
def test_graphdef_is_the_graphdef_split_gives(nnx: Any, flax_nnx: Any, seed: int, graph: bool | None) -> None:
    def call(nnx: Any) -> Any:
        model = _model(nnx, seed)
        return nnx.graphdef(model, graph=graph) == nnx.split(model, graph=graph)[0]

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"graphdef(model, graph={graph})")


@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(None)
@given(seed=strategies.seeds, graph=GRAPH_MODES)
def test_graphdefs_hash_and_compare_by_structure_as_in_flax(
    nnx: Any, flax_nnx: Any, seed: int, graph: bool | None
) -> None:
    """Graphdefs of two models of one structure are equal and hash alike (one finds the
    other as a dict key), those of another structure are not equal."""

    def call(nnx: Any) -> Any:
        first, second = nnx.graphdef(_model(nnx, seed), graph=graph), nnx.graphdef(_model(nnx, seed + 1), graph=graph)
        other = nnx.graphdef(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), graph=graph)
        return first == second, hash(first) == hash(second), {first: "found"}.get(second), first == other

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"graphdefs of equal and other structures (graph={graph})",
    )


@pytest.mark.kind("property")
@pytest.mark.apis("graphdef", "GraphDef")
@pytest.mark.documented(
    "api transforms page: jit's static arguments (split's graphdef among them) hashable and immutable"
)
@pytest.mark.parametrize("attribute", ["nodes", "new_attribute"])
def test_a_graphdef_is_immutable(nnx: Any, attribute: str) -> None:
    """Setting an attribute raises (flax 0.12.12: dataclasses.FrozenInstanceError, an
    AttributeError, for a field; TypeError for a new attribute; either will do)."""
    graphdef = nnx.graphdef(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))  # no shared Linear: tree mode takes it too
    with pytest.raises((AttributeError, TypeError)):
        setattr(graphdef, attribute, None)


@pytest.mark.apis("find_duplicates")
@given(seed=strategies.seeds, only=st.sampled_from(["everything", "Param", "Linear"]))
def test_find_duplicates_lists_the_paths_of_shared_nodes(nnx: Any, flax_nnx: Any, seed: int, only: str) -> None:
    def call(nnx: Any) -> Any:
        model = _model(nnx, seed)
        return (
            nnx.find_duplicates(model) if only == "everything" else nnx.find_duplicates(model, only=getattr(nnx, only))
        )

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"find_duplicates(model, only={only})")


@pytest.mark.apis("iter_module_children")
@given(seed=strategies.seeds, graph=GRAPH_MODES)
def test_iter_module_children_yields_the_direct_submodules(
    nnx: Any, flax_nnx: Any, seed: int, graph: bool | None
) -> None:
    def call(nnx: Any) -> Any:
        return [(key, type(child).__name__) for key, child in nnx.iter_module_children(_model(nnx, seed), graph=graph)]

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"iter_module_children(model, graph={graph})")


@pytest.mark.apis("map")
@given(seed=strategies.seeds, graph=GRAPH_MODES, recreate=st.booleans(), scale=st.integers(-3, 3))
def test_map_applies_a_function_to_every_variable_value(
    nnx: Any, flax_nnx: Any, seed: int, graph: bool | None, recreate: bool, scale: int
) -> None:
    def scaled(path: Any, value: Any) -> Any:
        array = value.get_value() if hasattr(value, "get_value") else value
        return value if jnp.issubdtype(array.dtype, jax.dtypes.prng_key) else value * scale

    def call(nnx: Any) -> Any:
        return _state_of(nnx, nnx.map(scaled, _model(nnx, seed), graph=graph, recreate_variables=recreate))

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"map(scale by {scale}, graph={graph}, recreate_variables={recreate})",
    )


@pytest.mark.apis("map", "merge")
@given(seed=strategies.seeds, recreate=st.booleans(), scale=st.integers(-3, 3))
def test_tree_mode_map_and_merge_wrap_plain_values_back_into_their_variables(
    nnx: Any, flax_nnx: Any, seed: int, recreate: bool, scale: int
) -> None:
    def call(nnx: Any) -> Any:
        model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(seed)), nnx.BatchNorm(3, rngs=nnx.Rngs(seed)))
        mapped = nnx.map(lambda path, value: value[...] * scale, model, graph=False, recreate_variables=recreate)
        graphdef, state = nnx.split(model, graph=False)
        merged = nnx.merge(graphdef, nnx.to_pure_dict(state), recreate_variables=recreate)
        leaf_types = [
            [
                type(leaf).__name__
                for leaf in jax.tree_util.tree_leaves(node, is_leaf=lambda x: isinstance(x, nnx.Variable))
            ]
            for node in (mapped, merged)
        ]
        return leaf_types, _state_of(nnx, mapped), _state_of(nnx, merged)

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"tree-mode map (scale by {scale}) and merge, recreate_variables={recreate}",
    )


@pytest.mark.apis("has_data")
@pytest.mark.parametrize("value", ["array", "int", "list of arrays", "Param"])
def test_has_data_lists_the_array_data_of_a_value(nnx: Any, flax_nnx: Any, value: str) -> None:
    def call(nnx: Any) -> Any:
        made = {
            "array": jnp.arange(3.0),
            "int": 3,
            "list of arrays": [jnp.ones(2), 1],
            "Param": nnx.Param(jnp.zeros(2)),
        }[value]
        return list(nnx.has_data(made))

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"has_data({value})")


@pytest.mark.apis("unpack")
@pytest.mark.parametrize("filters", [(), ("Param",), ("Param", "..."), ("Param", "BatchStat", "...")], ids=str)
@given(seed=strategies.seeds)
def test_unpack_splits_the_state_by_filters_into_graph_states_indexed_as_states(
    nnx: Any, flax_nnx: Any, seed: int, filters: tuple[str, ...]
) -> None:
    def call(nnx: Any) -> Any:
        chosen = [... if name == "..." else getattr(nnx, name) for name in filters]
        found = nnx.unpack(_model(nnx, seed), *chosen)
        states = found if isinstance(found, tuple) else (found,)
        indexed = [[(key, type(state[key]).__name__) for key in sorted(state, key=str)] for state in states]
        return [flat_leaves(nnx, state) for state in states], indexed

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"unpack(model, {', '.join(filters)})")


@pytest.mark.apis("set_metadata")
@given(seed=strategies.seeds, only=st.sampled_from(["Param", "BatchStat", "Variable"]), tag=st.text("ab", max_size=3))
def test_set_metadata_sets_it_on_the_filtered_variables(
    nnx: Any, flax_nnx: Any, seed: int, only: str, tag: str
) -> None:
    def call(nnx: Any) -> Any:
        model = _model(nnx, seed)
        nnx.set_metadata(model, only=getattr(nnx, only), tag=tag)
        return _state_of(nnx, model)

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"set_metadata(model, only={only}, tag={tag!r})")


@pytest.mark.apis("with_vars", "vars_as")
@given(
    seed=strategies.seeds,
    function=st.sampled_from(["with_vars", "vars_as"]),
    ref=st.sampled_from([None, False]),
    hijax=st.sampled_from([None, False]),
)
def test_with_vars_gives_variables_of_the_asked_mode(
    nnx: Any, flax_nnx: Any, seed: int, function: str, ref: bool | None, hijax: bool | None
) -> None:
    # Not drawn: ``mutable``, on which flax 0.12.12 raises an AttributeError of its own on this model.
    def call(nnx: Any) -> Any:
        model = getattr(nnx, function)(_model(nnx, seed), ref=ref, hijax=hijax, only=nnx.Param, allow_duplicates=True)
        return _state_of(nnx, model)

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"{function}(model, ref={ref}, hijax={hijax}, only=Param)",
    )


@pytest.mark.apis("variable_name_from_type", "variable_type_from_name")
@pytest.mark.parametrize("name", ["params", "batch_stats", "cache", "intermediates", "unheard_of"])
@pytest.mark.parametrize("allow_register", [False, True])
def test_variable_names_and_types_map_to_each_other(nnx: Any, flax_nnx: Any, name: str, allow_register: bool) -> None:
    def call(nnx: Any) -> Any:
        found = nnx.variable_type_from_name(name, allow_register=allow_register)
        return found.__name__, nnx.variable_name_from_type(found, allow_register=allow_register)

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"variable_type_from_name({name!r}, allow_register={allow_register})",
    )


@pytest.mark.apis("variable_type_from_name")
def test_variable_type_from_name_creates_a_subclass_of_base(nnx: Any, flax_nnx: Any) -> None:
    def call(nnx: Any) -> Any:
        found = nnx.variable_type_from_name("graph_utilities_stats", base=nnx.BatchStat, allow_register=True)
        return found.__name__, [cls.__name__ for cls in found.__mro__[:3]]

    assert_same(flax_nnx, nnx, call, same_warnings=True, what="variable_type_from_name(new name, base=BatchStat)")


@pytest.mark.apis("register_variable_name")
@pytest.mark.parametrize("overwrite", [False, True])
def test_register_variable_name_pairs_a_name_with_a_type(nnx: Any, flax_nnx: Any, overwrite: bool) -> None:
    def call(nnx: Any) -> Any:
        class Counter(nnx.Variable):
            pass

        nnx.register_variable_name(f"graph_utilities_counter_{overwrite}", Counter, overwrite=overwrite)
        again = nnx.register_variable_name(f"graph_utilities_counter_{overwrite}", overwrite=overwrite)(Counter)
        return again.__name__, nnx.variable_name_from_type(Counter)

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"register_variable_name twice, overwrite={overwrite}")


@pytest.mark.apis("pure")
@given(seed=strategies.seeds)
def test_pure_strips_the_variables_of_a_state(nnx: Any, flax_nnx: Any, seed: int) -> None:
    def call(nnx: Any) -> Any:
        pure = nnx.pure(nnx.state(_model(nnx, seed), nnx.Param))
        return [(jax.tree_util.keystr(path), leaf) for path, leaf in jax.tree_util.tree_flatten_with_path(pure)[0]]

    assert_same(flax_nnx, nnx, call, same_warnings=True, what="pure(state of the Params)")


@pytest.mark.apis("using_eager_sharding")
def test_using_eager_sharding_is_off_by_default(nnx: Any, flax_nnx: Any) -> None:
    assert_same(
        flax_nnx,
        nnx,
        lambda nnx: nnx.using_eager_sharding(),
        same_warnings=True,
        what="using_eager_sharding()",
    )


@pytest.mark.apis("jit_partial")
@pytest.mark.parametrize("graph_updates", [None, False])
@given(seed=strategies.seeds, input_seed=strategies.seeds)
def test_jit_partial_calls_with_the_model_bound(
    nnx: Any, flax_nnx: Any, seed: int, input_seed: int, graph_updates: bool | None
) -> None:
    x = strategies.layer_input((4, 2), input_seed)

    def call(nnx: Any) -> Any:
        model = _model(nnx, seed)
        forward = nnx.jit_partial(lambda model, x: model.norm(model.linear(x)), model, graph_updates=graph_updates)
        return forward(x), _state_of(nnx, model)

    assert_same(
        flax_nnx,
        nnx,
        call,
        same_warnings=True,
        what=f"jit_partial(forward, model, graph_updates={graph_updates})(x)",
    )


@pytest.mark.apis("jit_partial")
@pytest.mark.documented(None)
@pytest.mark.parametrize("method", ["lower", "trace", "eval_shape"])
def test_jit_partial_lowers_traces_and_evaluates_shapes_with_the_model_bound(
    nnx: Any, flax_nnx: Any, method: str
) -> None:
    """As a jitted function's own methods, with the bound model first: what ``eval_shape``
    gives, and the lowered or traced function's output shapes; the model is not updated."""
    x = strategies.layer_input((4, 2), 0)

    def call(nnx: Any) -> Any:
        model = _model(nnx, 0)

        def forward(model: Any, x: Any) -> Any:
            model.linear.kernel[...] += 1
            return model.norm(model.linear(x))

        made = getattr(nnx.jit_partial(forward, model, graph=False), method)(x)
        shapes = made if method == "eval_shape" else made.out_info
        return jax.tree.map(lambda a: (a.shape, str(a.dtype)), shapes), _state_of(nnx, model)

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"jit_partial(forward, model, graph=False).{method}(x)")


@pytest.mark.apis("fork_rngs", "with_rngs")
@given(
    seed=strategies.seeds,
    function=st.sampled_from(["fork_rngs", "with_rngs"]),
    split=st.sampled_from([None, 2, (2, 3)]),
)
def test_rng_streams_of_a_model_fork_and_split_as_flax_does(
    nnx: Any, flax_nnx: Any, seed: int, function: str, split: int | tuple[int, ...] | None
) -> None:
    def call(nnx: Any) -> Any:
        model = _model(nnx, seed)
        result = getattr(nnx, function)(model, split=split)
        return _state_of(nnx, model), _state_of(nnx, result) if function == "with_rngs" else None

    assert_same(flax_nnx, nnx, call, same_warnings=True, what=f"{function}(model, split={split})")
