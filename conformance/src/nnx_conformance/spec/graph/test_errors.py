"""Error conditions of the graph API: shared Variables in tree mode, states that do not fit
their GraphDef, non-exhaustive filters, and calls without the arguments they need."""

from __future__ import annotations

import re
from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("error")


def _two_layer_model(nnx: Any) -> Any:
    """A Module with two Params and one BatchStat, built without the nn layers."""

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.kernel = nnx.Param(jnp.ones((2, 3)))
            self.bias = nnx.Param(jnp.zeros(3))
            self.mean = nnx.BatchStat(jnp.zeros(3))

    return Model()


def _shared_model(nnx: Any) -> Any:
    """A Module whose attributes ``a`` and ``b`` hold the same Param."""

    class Shared(nnx.Module):
        def __init__(self, p: Any) -> None:
            self.a = p
            self.b = p

    return Shared(nnx.Param(jnp.ones(1)))


@pytest.mark.apis("split", "state", "graphdef", "clone")
@pytest.mark.parametrize("api", ["split", "state", "graphdef", "clone"])
def test_tree_mode_rejects_a_variable_shared_by_two_attributes_naming_both_paths(nnx: Any, api: str) -> None:
    # In tree mode (graph=False) a model is a plain pytree, which cannot express that
    # two attributes hold one Variable: the error names the Variable's two paths.
    model = _shared_model(nnx)
    with pytest.raises(ValueError, match=r"(?s)Duplicate Param.*found at paths:.*\.a.*\.b"):
        getattr(nnx, api)(model, graph=False)


@pytest.mark.apis("with_vars", "set_graph_mode")
@pytest.mark.parametrize("allow_duplicates", [False, True])
def test_with_vars_in_tree_mode_rejects_a_variable_shared_by_two_attributes_naming_both_paths(
    nnx: Any, allow_duplicates: bool
) -> None:
    # flax 0.12.12 takes the model apart as tree-mode split does, so allow_duplicates
    # (which is about turning shared Variables into Refs) does not let the sharing through.
    model = _shared_model(nnx)
    with nnx.set_graph_mode(False), pytest.raises(ValueError, match=r"(?s)Duplicate Param.*found at paths:.*\.a.*\.b"):
        nnx.with_vars(model, allow_duplicates=allow_duplicates)


@pytest.mark.apis("split", "merge")
def test_graph_mode_accepts_the_shared_variable_that_tree_mode_rejects(nnx: Any) -> None:
    # The counterpart of the error above: graph mode keeps one copy of the shared Param.
    model = _shared_model(nnx)
    graphdef, state = nnx.split(model, graph=True)
    assert list(state.keys()) == ["a"], f"expected the shared Param only under 'a', got keys {list(state.keys())}"
    copy = nnx.merge(graphdef, state)
    assert copy.a is copy.b, "merge should restore the sharing of the Param between 'a' and 'b'"


@pytest.mark.apis("split", "merge")
def test_merge_rejects_a_state_with_fewer_leaves_than_its_graphdef(nnx: Any) -> None:
    graphdef, params, _batch_stats = nnx.split(_two_layer_model(nnx), nnx.Param, ...)
    with pytest.raises(ValueError, match=r"Incorrect number of leaves, expected 3 leaves, but got 2"):
        nnx.merge(graphdef, params)


@pytest.mark.apis("split", "merge")
def test_merge_rejects_a_state_with_more_leaves_than_its_graphdef(nnx: Any) -> None:
    graphdef, params, batch_stats = nnx.split(_two_layer_model(nnx), nnx.Param, ...)
    with pytest.raises(ValueError, match=r"Incorrect number of leaves, expected 3 leaves, but got 4"):
        nnx.merge(graphdef, params, batch_stats, nnx.State({"extra": nnx.Param(1.0)}))


@pytest.mark.apis("split", "merge")
def test_merge_in_tree_mode_rejects_a_state_missing_a_leaf(nnx: Any) -> None:
    graphdef, state = nnx.split(_two_layer_model(nnx), graph=False)
    del state["mean"]
    with pytest.raises(ValueError, match=r"Incorrect number of leaves, expected 3 leaves, but got 2"):
        nnx.merge(graphdef, state)


@pytest.mark.apis("split", "merge", "State")
@pytest.mark.documented("merge docstring (the state is the one split returned, leaves at the graphdef's paths)")
def test_merge_in_tree_mode_refuses_a_state_whose_paths_are_not_its_graphdef_s_naming_the_first(nnx: Any) -> None:
    graphdef, state = nnx.split(_two_layer_model(nnx), graph=False)
    flat = list(state.flat_state())
    renamed = nnx.State.from_flat_path([((*path[:-1], f"{path[-1]}_renamed"), leaf) for path, leaf in flat])
    with pytest.raises(ValueError, match=re.escape(str(flat[0][0]))):
        nnx.merge(graphdef, renamed)


@pytest.mark.apis("split", "unflatten")
@pytest.mark.parametrize("change", [-1, 1], ids=["one leaf fewer", "one leaf more"])
def test_unflatten_rejects_a_list_of_leaves_of_another_length_than_its_graphdef(nnx: Any, change: int) -> None:
    graphdef, state = nnx.split(_two_layer_model(nnx))
    leaves = [variable for _, variable in nnx.to_flat_state(state)]
    given = leaves[:change] if change < 0 else [*leaves, leaves[0]]
    with pytest.raises(ValueError, match=rf"Incorrect number of leaves, expected 3 leaves, but got {3 + change}"):
        nnx.unflatten(graphdef, given)


@pytest.mark.apis("split", "merge")
def test_merge_rejects_the_pair_split_returns_unless_it_is_unpacked(nnx: Any) -> None:
    pair = nnx.split(_two_layer_model(nnx))
    with pytest.raises(TypeError, match=r"Expected a GraphDef or GraphState object, got"):
        nnx.merge(pair)


@pytest.mark.apis("update")
def test_update_with_a_state_below_an_attribute_the_model_lacks_names_that_attribute(nnx: Any) -> None:
    # flax 0.12.12: ValueError, "... assigned to static attribute 'absent' of Pytree type ..."
    state = nnx.State({"absent": {"deeper": {"kernel": nnx.Param(jnp.ones(1))}}})
    with pytest.raises(ValueError, match=r"'absent'"):
        nnx.update(_two_layer_model(nnx), state)


@pytest.mark.apis("merge")
def test_merge_rejects_a_first_argument_that_is_not_a_graphdef(nnx: Any) -> None:
    _, state = nnx.split(_two_layer_model(nnx))
    with pytest.raises(TypeError, match=r"Expected a GraphDef or GraphState object, got"):
        nnx.merge(state, state)


@pytest.mark.apis("split", "BatchStat")
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "tree"])
def test_split_with_filters_that_leave_a_variable_unmatched_raises(nnx: Any, graph: bool) -> None:
    # split partitions all the state: a filter list without a catch-all (...) that
    # leaves the BatchStat unmatched is an error, and the message names its path.
    with pytest.raises(ValueError, match=r"(?s)Non-exhaustive filters, got a non-empty remainder.*'mean'.*BatchStat"):
        nnx.split(_two_layer_model(nnx), nnx.Param, graph=graph)


@pytest.mark.apis("state", "BatchStat")
def test_state_with_filters_drops_unmatched_variables_instead_of_raising(nnx: Any) -> None:
    # The counterpart of the error above: state() selects, it does not partition.
    params = nnx.state(_two_layer_model(nnx), nnx.Param)
    assert sorted(params.keys()) == ["bias", "kernel"], f"expected only the Params, got {sorted(params.keys())}"


@pytest.mark.apis("pop")
def test_pop_without_filters_raises(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"Expected at least one filter"):
        nnx.pop(_two_layer_model(nnx))


@pytest.mark.apis("update")
def test_update_with_a_path_through_a_missing_attribute_raises(nnx: Any) -> None:
    # A nested path whose first key is not an attribute of the model has nowhere to go;
    # the error names the path's key.
    model = _two_layer_model(nnx)
    with pytest.raises(ValueError, match=r"missing"):
        nnx.update(model, nnx.State({"missing": {"kernel": nnx.Param(jnp.ones(1))}}))
