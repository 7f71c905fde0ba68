"""Laws at the edges of NNX transforms: loop bodies that change a Variable's type,
ref Variables under tree-mode ``checkify``, and negative ``static_argnums`` in ``remat``.

A loop body must give back the loop value with the structure it received, and the
type of each Variable is part of that structure. A ``ref=True`` Variable is written
in place under ``checkify`` as under any other transform. ``remat`` counts negative
``static_argnums`` from the end of the arguments, as ``jax.checkpoint`` does.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance import strategies as nst


@pytest.mark.area("transforms")
@pytest.mark.apis("fori_loop")
def test_a_graph_mode_fori_loop_body_that_changes_a_variables_type_is_rejected_as_a_change_of_pytree_structure(
    nnx: Any,
) -> None:
    class Model(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.zeros(3))

    def body(i: Any, model: Any) -> Any:
        model.a = nnx.BatchStat(model.a[...] + 1)
        return model

    with pytest.raises((TypeError, ValueError), match=r"pytree structure"):
        nnx.fori_loop(0, 3, body, Model(), graph=True)


@pytest.mark.area("transforms")
@pytest.mark.apis("checkify")
@given(value=nst.arrays(), amounts=st.lists(st.integers(-3, 3), min_size=1, max_size=3))
def test_updates_to_a_ref_variable_under_tree_mode_checkify_are_seen_outside_as_after_eager_execution(
    nnx: Any, value: Any, amounts: list[int]
) -> None:
    def add_all(model: Any) -> None:
        for amount in amounts:
            model.count[...] += amount

    eager = nnx.Dict(count=nnx.Variable(value, ref=True))
    add_all(eager)
    model = nnx.Dict(count=nnx.Variable(value, ref=True))
    error, _ = nnx.checkify(add_all, graph=False)(model)
    error.throw()
    np.testing.assert_array_equal(
        np.asarray(model.count[...]), np.asarray(eager.count[...]),
        err_msg=f"a ref=True Variable after nnx.checkify(graph=False) of adding {amounts} "
        "should hold what eager execution leaves",
    )


@pytest.mark.area("transforms")
@pytest.mark.apis("remat")
@given(x=st.floats(-3, 3), index=st.sampled_from([-1, 1]))
def test_remat_counts_negative_static_argnums_from_the_last_argument(nnx: Any, x: float, index: int) -> None:
    def activate(x: Any, name: str) -> Any:
        return getattr(jnp, name)(x)

    out = nnx.remat(activate, static_argnums=index)(jnp.asarray(x), "tanh")
    np.testing.assert_allclose(
        np.asarray(out), np.tanh(np.float32(x)), rtol=1e-5, atol=1e-6,
        err_msg=f"nnx.remat(static_argnums={index}) should pass the last argument as a static value",
    )
