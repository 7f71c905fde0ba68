"""Laws of with_vars outside graph mode: the ``only`` filter sees each Variable's real path."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.kind("property")


@pytest.mark.apis("with_vars", "PathContains", "set_graph_mode")
def test_with_vars_in_tree_mode_changes_only_the_variables_whose_path_matches(nnx: Any) -> None:
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    with nnx.set_graph_mode(False):
        converted = nnx.with_vars(model, ref=True, only=nnx.PathContains("kernel"))
    assert converted.kernel.ref, (
        "with_vars(ref=True, only=PathContains('kernel')) in tree mode left the kernel without a Ref"
    )
    assert not converted.bias.ref, "with_vars(ref=True, only=PathContains('kernel')) in tree mode gave the bias a Ref"


@pytest.mark.apis("with_vars", "PathContains", "set_graph_mode")
def test_with_vars_in_tree_mode_matches_paths_through_plain_containers(nnx: Any) -> None:
    tree = {"a": {"kernel": nnx.Param(jnp.ones(1))}, "b": nnx.Param(jnp.ones(1))}
    with nnx.set_graph_mode(False):
        converted = nnx.with_vars(tree, ref=True, only=nnx.PathContains("kernel"))
    assert converted["a"]["kernel"].ref, (
        "with_vars in tree mode did not give a Ref to the Variable at path ('a', 'kernel')"
    )
    assert not converted["b"].ref, (
        "with_vars in tree mode gave a Ref to the Variable at path ('b',), which has no 'kernel'"
    )
