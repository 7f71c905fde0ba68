"""Laws of Module: train/eval/set_attributes, view/with_attributes, iter_modules/iter_children."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_shares_arrays
from nnx_conformance.testing.describe import difference
from nnx_conformance.testing.snapshots import NodeEntry, VariableEntry, modules_by_path, snapshot, walk

pytestmark = pytest.mark.kind("property")


def flags(nnx: Any, node: Any) -> dict[tuple[Any, ...], dict[str, bool]]:
    """The train/eval flags each Module of the graph has, by path."""
    return {
        path: {flag: getattr(module, flag) for flag in strategies.MODE_FLAGS if flag in vars(module)}
        for path, module in modules_by_path(nnx, node).items()
    }


def set_flags(
    found: dict[tuple[Any, ...], dict[str, bool]], value: bool, where: Any = None
) -> dict[Any, dict[str, bool]]:
    """``found`` with every flag of the Modules selected by ``where`` (all by default) set to ``value``."""
    return {
        path: {flag: value if where is None or where(path) else old for flag, old in module_flags.items()}
        for path, module_flags in found.items()
    }


def without_flags(shot: dict[tuple[Any, ...], Any]) -> dict[tuple[Any, ...], Any]:
    """A snapshot without the train/eval flags, to check that nothing else changed."""
    return {path: entry for path, entry in shot.items() if not path or path[-1] not in strategies.MODE_FLAGS}


def draw_flagged(nnx: Any, data: st.DataObject) -> Any:
    return data.draw(strategies.graphs(nnx, shared=True, mode_flags=True), label="graph with train/eval flags")


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references
@pytest.mark.apis("Module.train", "Module.eval")
@given(data=st.data())
def test_train_and_eval_set_the_flags_of_exactly_the_modules_that_have_them(nnx: Any, data: st.DataObject) -> None:
    node = draw_flagged(nnx, data)
    method = data.draw(st.sampled_from(["train", "eval"]), label="method")
    before, rest = flags(nnx, node), without_flags(snapshot(nnx, node))
    getattr(node, method)()
    expected = set_flags(before, method == "eval")
    assert flags(nnx, node) == expected, f"after {method}() the flags are {flags(nnx, node)}, expected {expected}"
    problem = difference(rest, without_flags(snapshot(nnx, node)))
    assert problem is None, f"{method}() changed more than the flags {problem}"


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references
@pytest.mark.apis("Module.set_attributes")
@given(data=st.data())
def test_set_attributes_reaches_exactly_the_matching_modules(nnx: Any, data: st.DataObject) -> None:
    node = draw_flagged(nnx, data)
    filter_ = data.draw(st.sampled_from([strategies.classes(nnx).node, nnx.Dropout, nnx.Module, ...]), label="filter")
    value = data.draw(st.booleans(), label="value")
    before = flags(nnx, node)
    modules = modules_by_path(nnx, node)
    predicate = nnx.filterlib.to_predicate(filter_)
    node.set_attributes(filter_, deterministic=value, raise_if_not_found=False)
    expected = {
        path: {
            flag: value if flag == "deterministic" and predicate(path, modules[path]) else old
            for flag, old in module_flags.items()
        }
        for path, module_flags in before.items()
    }
    assert flags(nnx, node) == expected, (
        f"set_attributes({filter_!r}, deterministic={value}) left the flags {flags(nnx, node)}, expected {expected}"
    )


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references
@pytest.mark.apis("with_attributes")
@given(data=st.data())
def test_with_attributes_leaves_the_original_untouched_and_shares_its_arrays(nnx: Any, data: st.DataObject) -> None:
    node = draw_flagged(nnx, data)
    value = data.draw(st.booleans(), label="value")
    before, shot = flags(nnx, node), snapshot(nnx, node)
    if not any("deterministic" in module_flags for module_flags in before.values()):
        with pytest.raises(
            ValueError, match=r"Could not find at least one instance of the following attributes: \['deterministic'\]"
        ):
            nnx.with_attributes(node, deterministic=value)
        return
    new = nnx.with_attributes(node, deterministic=value)
    problem = difference(shot, snapshot(nnx, node))
    assert problem is None, f"with_attributes changed the original {problem}"
    expected = {
        path: {flag: value if flag == "deterministic" else old for flag, old in module_flags.items()}
        for path, module_flags in before.items()
    }
    assert flags(nnx, new) == expected, (
        f"with_attributes(deterministic={value}) gave the flags {flags(nnx, new)}, expected {expected}"
    )
    assert_shares_arrays(nnx, node, new, "with_attributes")


@pytest.mark.graph_mode("graph")  # the graph drawn has shared references
@pytest.mark.apis("view", "Dropout")
@given(data=st.data())
def test_view_sets_the_view_attributes_of_a_copy_and_shares_the_arrays(nnx: Any, data: st.DataObject) -> None:
    node = draw_flagged(nnx, data)
    value = data.draw(st.booleans(), label="deterministic")
    shot = snapshot(nnx, node)
    modules = modules_by_path(nnx, node)
    dropouts = {path for path, module in modules.items() if isinstance(module, nnx.Dropout)}
    if not dropouts:
        with pytest.raises(ValueError, match=r"Unused keys found in nnx.view: \['deterministic'\]"):
            nnx.view(node, deterministic=value)
        return
    new = nnx.view(node, deterministic=value)
    problem = difference(shot, snapshot(nnx, node))
    assert problem is None, f"view changed the original {problem}"
    expected = set_flags(flags(nnx, node), value, where=lambda path: path in dropouts)
    assert flags(nnx, new) == expected, (
        f"view(deterministic={value}) gave the flags {flags(nnx, new)}, expected {expected}"
    )
    assert_shares_arrays(nnx, node, new, "view")


def post_order(path: tuple[Any, ...]) -> list[tuple[int, Any]]:
    """Sort key of a depth-first post-order with sorted keys: children before parents."""
    return [(0, part) for part in path] + [(1, None)]


@pytest.mark.apis("iter_modules")
@given(data=st.data())
def test_iter_modules_visits_each_module_once_in_depth_first_post_order(nnx: Any, data: st.DataObject) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.graphs(nnx, shared=graph, cycles=graph, mode_flags=True), label="graph")
    modules = modules_by_path(nnx, node)
    expected = sorted(modules, key=post_order)
    visits = list(nnx.iter_modules(node, graph=graph))
    assert [path for path, _ in visits] == expected, (
        f"iter_modules gave the paths {[p for p, _ in visits]}, expected {expected}"
    )
    wrong = [path for path, module in visits if module is not modules[path]]
    assert not wrong, f"iter_modules yielded other objects than the Modules at {wrong}"


@pytest.mark.apis("iter_children")
@given(data=st.data())
def test_iter_children_yields_the_immediate_variables_and_pytrees_in_sorted_order(
    nnx: Any, data: st.DataObject
) -> None:
    graph = data.draw(strategies.modes(), label="graph mode")
    node = data.draw(strategies.trees(nnx), label="tree")
    shot, objects = walk(nnx, node)
    expected = [
        path[0]
        for path, entry in shot.items()
        if len(path) == 1
        and (isinstance(entry, VariableEntry) or (isinstance(entry, NodeEntry) and issubclass(entry.type, nnx.Pytree)))
    ]
    children = list(nnx.iter_children(node, graph=graph))
    keys = [key for key, _ in children]
    assert keys == expected, f"iter_children(graph={graph}) gave the keys {keys}, expected {expected}"
    wrong = [key for key, child in children if (key,) in objects and child is not objects[(key,)]]
    assert not wrong, f"iter_children yielded other objects than the node's attributes at {wrong}"
