"""Laws of three graph utilities: ``iter_module_children`` yields, by key, the direct
children of a node that are Modules, as ``iter_children`` does for all of them (its
docstring); flax 0.12.12 counts every Pytree child as one, in both modes, and yields a
child held at two keys under each (the docstring's example, a Linear, has no child to
tell these apart). ``vars_as`` gives a copy of the node whose filtered Variables have the
asked ``ref`` mode, leaving the node as it was; ``current_update_context`` is the
innermost ``update_context`` of its tag, and a ValueError naming the tag outside any.
``graphlib.is_graph_node`` and ``graphlib.is_node`` answer as flax's do, and a callable pytree
held by a node is walked through as in flax (differential)."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import VariableEntry, snapshot, walk

pytestmark = pytest.mark.kind("property")


@pytest.mark.apis("iter_module_children")
@given(data=st.data())
def test_iter_module_children_yields_each_direct_pytree_child_by_each_key_that_holds_it(
    nnx: Any, data: st.DataObject
) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.graphs(nnx, shared=graph), label="graph")
    attributes = {name: value for name, value in vars(node).items() if not name.startswith("_")}
    expected = sorted((name, id(value)) for name, value in attributes.items() if isinstance(value, nnx.Pytree))
    got = [(key, id(child)) for key, child in nnx.iter_module_children(node, graph=graph)]
    assert sorted(got) == expected and len(got) == len(expected), (
        f"iter_module_children(node, graph={graph}) keys: "
        f"expected {[key for key, _ in expected]}, got {[key for key, _ in got]}"
    )


def _without_modes(entries: dict[Any, Any]) -> dict[Any, Any]:
    """A snapshot with the ``ref`` and ``hijax`` metadata of its Variables left out."""

    def strip(entry: Any) -> Any:
        if not isinstance(entry, VariableEntry):
            return entry
        return entry._replace(metadata={k: v for k, v in entry.metadata.items() if k not in ("ref", "hijax")})

    return {path: strip(entry) for path, entry in entries.items()}


@pytest.mark.apis("vars_as")
@pytest.mark.filterwarnings("ignore:This function is deprecated:DeprecationWarning")  # vars_as, in favour of with_vars
@given(data=st.data(), mode=st.just("ref"), only=st.sampled_from(["Param", "Variable"]))
def test_vars_as_gives_a_copy_whose_filtered_variables_have_the_asked_mode(
    nnx: Any, data: st.DataObject, mode: str, only: str
) -> None:
    # Not drawn: ``mutable``, on which flax 0.12.12 raises an AttributeError of its own.
    node = data.draw(strategies.trees(nnx), label="graph")
    before = snapshot(nnx, node)
    converted = nnx.vars_as(node, **{mode: True}, only=getattr(nnx, only))
    assert converted is not node, f"vars_as(node, {mode}=True) returns a new node"
    problem = difference(before, snapshot(nnx, node))
    assert problem is None, f"vars_as(node, {mode}=True) changed node {problem}"
    problem = difference(_without_modes(before), _without_modes(snapshot(nnx, converted)))
    assert problem is None, f"vars_as(node, {mode}=True) changed more than the Variables' mode {problem}"
    originals, copies = walk(nnx, node)[1], walk(nnx, converted)[1]
    for path, variable in copies.items():
        if isinstance(variable, nnx.Variable):
            expected = isinstance(originals[path], getattr(nnx, only)) or getattr(originals[path], mode)
            assert getattr(variable, mode) == expected, (
                f"vars_as(node, {mode}=True, only={only}): the {type(variable).__name__} at {path} has {mode}="
                f"{getattr(variable, mode)}, expected {expected}"
            )


@pytest.mark.apis("current_update_context")
@given(
    tags=st.lists(st.sampled_from(["a", "b", ("c", 1)]), min_size=1, max_size=4),
    asked=st.sampled_from(["a", "b", ("c", 1), "d"]),
)
def test_current_update_context_is_the_innermost_update_context_of_its_tag(
    nnx: Any, tags: list[Any], asked: Any
) -> None:
    with contextlib.ExitStack() as stack:
        entered = [(tag, stack.enter_context(nnx.update_context(tag))) for tag in tags]
        innermost = [context for tag, context in entered if tag == asked]
        if not innermost:
            with pytest.raises(ValueError, match=re.escape(repr(asked))):
                nnx.current_update_context(asked)
            return
        assert nnx.current_update_context(asked) is innermost[-1], (
            f"current_update_context({asked!r}) inside update_contexts {tags}: expected the innermost of tag {asked!r}"
        )


def _kinds_of_value(nnx: Any) -> dict[str, Any]:
    """One value of each kind a graph may hold, by name, made with ``nnx``."""

    class Block(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))

    class Plain(nnx.Pytree):
        pass

    class Legacy(nnx.Object):
        pass

    rngs = nnx.Rngs(0)
    return {
        "Variable": nnx.Variable(jnp.ones(2)),
        "Param": nnx.Param(jnp.ones(2)),
        "BatchStat": nnx.BatchStat(1.0),
        "ref=True Param": nnx.Param(jnp.ones(2), ref=True),
        "RngKey": rngs.default.key,
        "jax.Ref": jax.new_ref(jnp.ones(2)),
        "jax array": jnp.ones(2),
        "numpy array": np.ones(2),
        "int": 3,
        "None": None,
        "str": "s",
        "list": [1],
        "tuple": (1,),
        "empty tuple": (),
        "dict": {"a": 1},
        "Pytree": Plain(),
        "Object": Legacy(),
        "Module": Block(),
        "Linear": nnx.Linear(1, 1, rngs=rngs),
        "List": nnx.List([1]),
        "Dict": nnx.Dict(a=1),
        "Rngs": rngs,
        "RngStream": rngs.default,
        "State": nnx.state(Block()),
        "GraphDef": nnx.graphdef(Block()),
    }


@pytest.mark.kind("differential")
@pytest.mark.apis("set_graph_mode")
def test_is_graph_node_and_is_node_answer_as_flax_for_each_kind_of_value_in_both_modes(nnx: Any, flax_nnx: Any) -> None:
    # graphlib's own functions, not nnx names: a Variable and an array Ref are graph nodes
    # (they have an identity) but not nodes (graph mode does not walk into them).
    def scenario(nnx: Any) -> Any:
        answers = {}
        for graph in (True, False):
            with nnx.set_graph_mode(graph):
                for name, value in _kinds_of_value(nnx).items():
                    answers[f"{name} (graph={graph})"] = {
                        "is_graph_node": nnx.graphlib.is_graph_node(value),
                        "is_node": nnx.graphlib.is_node(value),
                    }
        return answers

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("differential")
@pytest.mark.apis("iter_graph", "state", "split", "merge", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("arguments", [(), (1,)], ids=["no argument", "an int argument"])
@pytest.mark.parametrize("holder", ["a Module attribute", "a List item"])
def test_a_callable_pytree_held_by_a_node_is_walked_through_as_in_flax(
    nnx: Any, flax_nnx: Any, holder: str, arguments: tuple
) -> None:
    """A ``jax.tree_util.Partial`` is a pytree node, though callable: iter_graph goes into
    it; it stays out of the state and comes back from a split and merge."""

    def scenario(nnx: Any) -> Any:
        partial = jax.tree_util.Partial(jnp.add, *arguments)
        if holder == "a List item":
            node = nnx.List([partial, nnx.Param(jnp.ones(1))])
        else:
            node = nnx.Module()
            node.f, node.w = partial, nnx.Param(jnp.ones(1))
        paths = [tuple(path) for path, _ in nnx.iter_graph(node)]
        merged = nnx.merge(*nnx.split(node))
        return paths, nnx.state(node), type(merged[0] if holder == "a List item" else merged.f).__name__

    assert_same(flax_nnx, nnx, scenario)
