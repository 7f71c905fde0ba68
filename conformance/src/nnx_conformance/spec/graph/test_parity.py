"""Parity of the graph API with flax.nnx on drawn Module graphs, in graph and tree mode:
split/merge/state/graphdef/update/pop/clone, flatten/unflatten, iter_graph,
recursive_map, to_tree/from_tree and as_abstract give the same results and leave the
graphs in the same state; inputs flax rejects are rejected alike."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing import isolated
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

GUIDE = "guide:nnx_basics (split/merge/update), api graph page"


def _filters(nnx: Any, name: str) -> tuple[Any, ...]:
    return {"all": (), "params": (nnx.Param, ...), "tagged": ("alpha", nnx.BatchStat, ...)}[name]


def _public(path: tuple[Any, ...]) -> bool:
    """Whether no key of ``path`` is a private attribute (the internals flax's tree mode walks)."""
    return not any(isinstance(key, str) and key.startswith("_") for key in path)


filter_names = st.sampled_from(["all", "params", "tagged"])


@pytest.mark.apis("split", "merge", "graphdef", "state")
@pytest.mark.documented(GUIDE)
@given(recipe=gs.graph_recipes(shared=True), graph=st.booleans(), filters=filter_names)
def test_split_and_merge_give_flax_states_and_graphs(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool, filters: str
) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        graphdef, *states = nnx.split(root, *_filters(nnx, filters), graph=graph)
        merged = nnx.merge(graphdef, *states)
        return states, merged, nnx.state(root, graph=graph), root

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("split", "merge")
@pytest.mark.documented(None)
@given(recipe=gs.variable_recipes(), graph=st.booleans(), filters=filter_names)
def test_a_variable_split_on_its_own_is_its_own_state_as_in_flax(
    nnx: Any, flax_nnx: Any, recipe: gs.VariableRecipe, graph: bool, filters: str
) -> None:
    """``nnx.split`` of a bare Variable: the group that takes it is the Variable's own state,
    not a State holding it; the other groups are empty States; merge rebuilds it."""

    def scenario(nnx: Any) -> Any:
        variable = gs.variable_type(nnx, recipe.type_name)(jnp.asarray(recipe.value), **dict(recipe.metadata))
        graphdef, *states = nnx.split(variable, *_filters(nnx, filters), graph=graph)
        return [type(state).__name__ for state in states], states, nnx.merge(graphdef, *states)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("update", "state", "clone")
@pytest.mark.documented(GUIDE)
@given(recipe=gs.graph_recipes(), graph=st.booleans())
def test_update_writes_a_changed_state_back_as_flax_does(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        copy = nnx.clone(root, graph=graph)
        state = jax.tree.map(lambda x: x * 2 + 1, nnx.state(root, graph=graph))
        nnx.update(root, state)
        return root, copy, copy is root

    assert_same(flax_nnx, nnx, scenario)


NEW_ENTRIES = {
    "a key of a Dict": lambda nnx: {"d": {"b": nnx.Param(jax.numpy.zeros(2))}},
    "an index of a List": lambda nnx: {"items": {1: nnx.Param(jax.numpy.zeros(2))}},
    "an attribute of a Module": lambda nnx: {"new": nnx.Param(jax.numpy.zeros(2))},
}
"""States naming an entry the model lacks, by where it would go."""


@pytest.mark.apis("update", "Dict", "List")
@pytest.mark.parametrize("entry", sorted(NEW_ENTRIES))
def test_update_with_an_entry_the_model_lacks_leaves_what_flax_leaves(nnx: Any, flax_nnx: Any, entry: str) -> None:
    def scenario(nnx: Any) -> Any:
        class Model(nnx.Module):
            def __init__(self) -> None:
                self.d = nnx.Dict(a=nnx.Param(jax.numpy.ones(1)))
                self.items = nnx.List([nnx.Param(jax.numpy.ones(1))])

        model = Model()
        nnx.update(model, nnx.State(NEW_ENTRIES[entry](nnx)))
        return nnx.state(model), model

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("pop")
@pytest.mark.documented("api graph page: pop removes the matching Variables from the graph")
@given(recipe=gs.graph_recipes(variables_in_lists=False), filters=st.sampled_from(["params", "tagged"]))
def test_pop_removes_what_flax_removes(nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, filters: str) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        popped = nnx.pop(root, *_filters(nnx, filters)[:-1])
        return popped, root

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("graph.flatten", "graph.unflatten")
@pytest.mark.documented(None)
@given(recipe=gs.graph_recipes(shared=True), graph=st.booleans())
def test_flatten_and_unflatten_round_trip_as_in_flax(
    nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        graphdef, flat = nnx.graphlib.flatten(root, graph=graph)
        return list(flat), nnx.graphlib.unflatten(graphdef, flat)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("iter_graph", "recursive_map")
@pytest.mark.documented("api graph page: iter_graph and recursive_map examples")
@pytest.mark.parametrize("graph", [True, False], ids=["graph_mode", "tree_mode"])
@given(shared=gs.graph_recipes(shared=True), tree=gs.graph_recipes())
def test_iter_graph_and_recursive_map_visit_what_flax_visits(
    nnx: Any, flax_nnx: Any, shared: gs.GraphRecipe, tree: gs.GraphRecipe, graph: bool
) -> None:
    """Shared references in graph mode; tree mode rejects them (a test of its own)."""

    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, shared if graph else tree).root
        visited = [(path, node) for path, node in nnx.iter_graph(root, graph=graph) if _public(path)]
        seen = []

        def visit(path: Any, node: Any) -> Any:
            if _public(path):
                seen.append(path)
            return node

        mapped = nnx.recursive_map(visit, root, graph=graph)
        return visited, seen, mapped

    assert_same(flax_nnx, nnx, scenario)


CYCLES = """
import jax.numpy as jnp

def cyclic(nnx):
    class Holder(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.child = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
            self.child.parent = self
    return Holder()

CASES = {
    "iter_graph": lambda nnx: list(nnx.iter_graph(cyclic(nnx), graph=False)),
    "recursive_map": lambda nnx: nnx.recursive_map(lambda path, node: node, cyclic(nnx), graph=False),
    "split": lambda nnx: nnx.split(cyclic(nnx), graph=False),
    "state": lambda nnx: nnx.state(cyclic(nnx), graph=False),
}
"""


@pytest.fixture(scope="module")
def cycle_outcomes(nnx: Any, flax_nnx: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The exceptions the cases of CYCLES raise on flax and on the implementation, each
    run in a fresh interpreter (an implementation may recurse forever on a cycle)."""
    return isolated.exceptions("flax.nnx", CYCLES), isolated.exceptions(nnx.__name__, CYCLES)


@pytest.mark.apis("iter_graph", "recursive_map", "split", "state")
@pytest.mark.documented(None)
@pytest.mark.parametrize("api", ["iter_graph", "recursive_map", "split", "state"])
def test_tree_mode_rejects_a_cycle_with_value_error(cycle_outcomes: Any, api: str) -> None:
    expected, actual = (outcomes[api] for outcomes in cycle_outcomes)
    assert expected is not None and "ValueError" in expected[0], f"flax.nnx rejects a cycle with ValueError: {expected}"
    assert actual is not None and expected[0][0] in actual[0], (
        f"tree-mode {api} on a Module graph with a cycle: flax.nnx raises {expected[0][0]}({expected[1]!r}); "
        f"the implementation {'returns' if actual is None else f'raises {actual[0][0]}({actual[1]!r})'}"
    )


@pytest.mark.apis("recursive_map")
@pytest.mark.documented(None)
@pytest.mark.parametrize("shared", ["a Variable", "a Ref"])
def test_tree_mode_recursive_map_rejects_a_shared_leaf_with_value_error(nnx: Any, flax_nnx: Any, shared: str) -> None:
    def scenario(nnx: Any) -> Any:
        leaf = nnx.Param(jnp.ones(2)) if shared == "a Variable" else jax.new_ref(jnp.ones(2))
        root = gs.classes(nnx).node(a=leaf, b=leaf)
        return nnx.recursive_map(lambda path, node: node, root, graph=False)

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("Duplicate",))
    assert isinstance(outcome.error, ValueError), "flax rejects a shared leaf in tree mode with ValueError"


@pytest.mark.apis("split")
@pytest.mark.documented(None)
def test_graph_mode_split_keeps_one_leaf_for_a_ref_held_twice(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        ref = jax.new_ref(jnp.arange(2.0))
        return nnx.split(gs.classes(nnx).node(a=ref, b=ref), graph=True)[1]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("data", "state")
@pytest.mark.documented("object page: nnx.data marks an attribute as data, a leaf of the state")
@pytest.mark.parametrize("value", [3.0, 2, True], ids=["float", "int", "bool"])
def test_a_scalar_marked_data_is_a_state_leaf(nnx: Any, flax_nnx: Any, value: Any) -> None:
    def scenario(nnx: Any) -> Any:
        return nnx.state(gs.classes(nnx).node(s=nnx.data(value)))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("to_tree", "from_tree")
@pytest.mark.documented(None)
@given(recipe=gs.graph_recipes(shared=True))
def test_to_tree_and_from_tree_round_trip_as_in_flax(nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        tree = nnx.to_tree((root, 1))
        leaves = jax.tree.leaves(tree)
        return leaves, nnx.from_tree(tree)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("as_abstract", "eval_shape")
@pytest.mark.documented(None)
@given(recipe=gs.graph_recipes(), graph=st.booleans())
def test_as_abstract_gives_flax_abstract_values(nnx: Any, flax_nnx: Any, recipe: gs.GraphRecipe, graph: bool) -> None:
    def scenario(nnx: Any) -> Any:
        root = gs.build(nnx, recipe).root
        abstract = nnx.as_abstract(nnx.eval_shape(lambda: nnx.clone(root)), graph=graph)
        return jax.tree.map(lambda x: (type(x).__name__, str(getattr(x, "aval", x))), nnx.state(abstract))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("merge")
@pytest.mark.documented(None)
@given(
    given_as=st.sampled_from(
        ["a list of arrays", "a list of Variables", "a short list", "two lists", "a list then a State", "a tuple"]
    ),
    graph=st.booleans(),
)
def test_merge_takes_a_list_as_the_leaves_in_path_order_as_flax(
    nnx: Any, flax_nnx: Any, given_as: str, graph: bool
) -> None:
    """A list given to merge is the state's leaves in sorted path order (Variables or their
    values); of another length, or before other states, merge refuses it as flax does. (After
    a State, flax 0.12.12 takes it silently: see the error test below.)"""

    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        model.count = nnx.BatchStat(jnp.array(7.0))
        graphdef, params, _counts = nnx.split(model, nnx.Param, nnx.BatchStat, graph=graph)
        bias, count, kernel = jnp.zeros(3), jnp.array(1.0), jnp.ones((2, 3))
        states = {
            "a list of arrays": ([bias, count, kernel],),
            "a list of Variables": ([nnx.Param(bias), nnx.BatchStat(count), nnx.Param(kernel)],),
            "a short list": ([bias, count],),
            "two lists": ([bias], [count, kernel]),
            "a list then a State": ([count], params),
            "a tuple": ((bias, count, kernel),),
        }[given_as]
        return nnx.merge(graphdef, *states)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("error")
@pytest.mark.apis("merge")
@pytest.mark.documented("docstring of flax.nnx.merge: the states are State objects")
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
def test_merge_refuses_a_list_of_leaves_after_a_state(nnx: Any, graph: bool) -> None:
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    model.count = nnx.BatchStat(jnp.array(7.0))
    graphdef, params, _ = nnx.split(model, nnx.Param, nnx.BatchStat, graph=graph)
    with pytest.raises(ValueError, match="list"):
        nnx.merge(graphdef, params, [jnp.array(1.0)])


STATIC_VALUES = (
    "5",
    "'x'",
    "None",
    "()",
    "(1, 2)",
    "the first tuple again",
    "data (1, None, array)",
    "Linear without bias",
)


@pytest.mark.apis("iter_graph")
@pytest.mark.documented(None)
@given(values=st.lists(st.sampled_from(STATIC_VALUES), min_size=1, max_size=6), graph=st.booleans())
def test_iter_graph_walks_static_containers_and_visits_each_once_as_flax(
    nnx: Any, flax_nnx: Any, values: list[str], graph: bool
) -> None:
    """Graph mode walks into containers and None held by any attribute and visits each such
    object once (a leaf at every place it is held); tree mode walks the data attributes."""

    def scenario(nnx: Any) -> Any:
        shared = (1, 2)

        def make(value: str) -> Any:
            return {
                "5": 5,
                "'x'": "x",
                "None": None,
                "()": (),
                "(1, 2)": (1, 2),
                "the first tuple again": shared,
                "data (1, None, array)": nnx.data((1, None, jnp.ones(1))),
                "Linear without bias": nnx.Linear(1, 1, use_bias=False, rngs=nnx.Rngs(0)),
            }[value]

        class Holder(nnx.Module):
            def __init__(self) -> None:
                self.first = shared
                for i, value in enumerate(values):
                    setattr(self, f"a{i}", make(value))

        return [(path, type(value).__name__) for path, value in nnx.iter_graph(Holder(), graph=graph) if _public(path)]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("merge")
@pytest.mark.parametrize("extra", [-1, 1], ids=["one leaf short", "one leaf over"])
def test_merge_refuses_a_list_of_leaves_of_another_count_as_flax(nnx: Any, flax_nnx: Any, extra: int) -> None:
    def scenario(n: Any) -> Any:
        graphdef, state = n.split(n.Linear(2, 3, rngs=n.Rngs(0)))
        leaves = jax.tree.leaves(state)
        return n.merge(graphdef, leaves[:extra] if extra < 0 else [*leaves, jnp.ones(1)])

    outcome = assert_same(flax_nnx, nnx, scenario, mentions=("number of leaves",))
    assert isinstance(outcome.error, ValueError), "flax refuses a list of leaves of another count with ValueError"


@pytest.mark.apis("split", "merge", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_split_and_merge_rebuild_a_graph_of_more_than_256_leaves_as_flax(nnx: Any, flax_nnx: Any, graph: bool) -> None:
    """Leaf counts past the small integers CPython keeps one object of are compared by value."""

    def scenario(nnx: Any) -> Any:
        params = nnx.List([nnx.Param(jnp.full((1,), float(i))) for i in range(300)])
        rebuilt = nnx.merge(*nnx.split(params, graph=graph))
        return len(rebuilt), rebuilt[299], rebuilt[0]

    assert_same(flax_nnx, nnx, scenario)
