"""Parity of ``nnx.traversals`` with flax.nnx: nested mappings of drawn depth flattened to
paths (kept empty nodes, a leaf predicate, a separator) and back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("state")]

nested = st.recursive(
    st.integers(0, 9),
    lambda children: st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
    max_leaves=8,
).filter(lambda tree: isinstance(tree, dict))
"""Nested dicts (empty ones included) of small ints, up to a few levels deep."""


@pytest.mark.apis("traversals")
@pytest.mark.documented(None)
@given(tree=nested, keep_empty_nodes=st.booleans(), sep=st.sampled_from([None, "/"]), stop_at_a=st.booleans())
def test_flattening_and_unflattening_a_nested_mapping_give_flax_paths_and_trees(
    nnx: Any, flax_nnx: Any, tree: dict[str, Any], keep_empty_nodes: bool, sep: str | None, stop_at_a: bool
) -> None:
    def is_leaf(path: tuple[Any, ...], value: Any) -> bool:
        return stop_at_a and path[-1:] == ("a",)

    def scenario(nnx: Any) -> Any:
        traversals = nnx.traversals
        flat = traversals.flatten_mapping(tree, keep_empty_nodes=keep_empty_nodes, is_leaf=is_leaf, sep=sep)
        pairs = traversals.flatten_to_sequence(tree, is_leaf=is_leaf)
        again = traversals.unflatten_mapping(flat, sep=sep)
        return (
            sorted(flat.items(), key=repr),
            sorted(pairs, key=repr),
            again,
            traversals.unflatten_mapping(pairs),
            [v is traversals.empty_node for v in flat.values()],
        )

    assert_same(flax_nnx, nnx, scenario)
