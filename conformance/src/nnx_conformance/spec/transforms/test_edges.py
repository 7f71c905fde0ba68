"""Laws at the edges of NNX transforms: loop bodies that change a Variable's type, and
negative ``static_argnums`` in ``remat``.

A loop body must give back the loop value with the structure it received, and the
type of each Variable is part of that structure. ``remat`` counts negative
``static_argnums`` from the end of the arguments, as ``jax.checkpoint`` does.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.kind("property")


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


@pytest.mark.apis("remat")
@given(x=st.floats(-3, 3), index=st.sampled_from([-1, 1]))
def test_remat_counts_negative_static_argnums_from_the_last_argument(nnx: Any, x: float, index: int) -> None:
    def activate(x: Any, name: str) -> Any:
        return getattr(jnp, name)(x)

    out = nnx.remat(activate, static_argnums=index)(jnp.asarray(x), "tanh")
    np.testing.assert_allclose(
        np.asarray(out),
        np.tanh(np.float32(x)),
        rtol=1e-5,
        atol=1e-6,
        err_msg=f"nnx.remat(static_argnums={index}) should pass the last argument as a static value",
    )
