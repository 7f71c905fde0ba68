"""Differential tests of the shardings ``eval_shape`` gives abstract Variables: with graph
updates, a Variable of the output whose ShapeDtypeStruct has no sharding gets a
NamedSharding on its ``mesh`` metadata, or else on the mesh of ``jax.set_mesh``, with the
spec of its ``out_sharding`` (``P()`` without one), eager sharding on or off; without a
mesh, or in tree mode or without graph updates, it has none; as flax's."""

from __future__ import annotations

import contextlib
from typing import Any

import jax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.multi_device]

AXIS = "model"
NAMES = {
    "mesh axis": (AXIS, None),
    "logical axis": ("rows", None),
    "replicated": (None, None),
    "unknown axis": ("other", None),
}
"""The kernel's ``out_sharding`` drawn, by name; the logical name ``rows`` maps to AXIS."""
MODES = {
    "graph updates": {"graph": True, "graph_updates": True},
    "graph, no updates": {"graph": True, "graph_updates": False},
    "tree": {"graph": False, "graph_updates": False},
}


def _linear(nnx: Any, form: str, names: tuple[Any, ...], mesh: Any) -> Any:
    """A Linear whose kernel carries ``names`` (and ``mesh``, if given) as ``with_partitioning``
    or as ``kernel_metadata``; its bias carries nothing."""
    count = len(jax.devices())
    if form == "with_partitioning":
        init = nnx.with_partitioning(nnx.initializers.lecun_normal(), names, mesh=mesh)
        return nnx.Linear(count, 2, kernel_init=init, rngs=nnx.Rngs(0))
    metadata = {"out_sharding": names, **({"mesh": mesh} if mesh is not None else {})}
    return nnx.Linear(count, 2, kernel_metadata=metadata, rngs=nnx.Rngs(0))


@pytest.mark.apis("eval_shape", "with_partitioning", "use_eager_sharding", "logical_axis_rules", "Linear")
@given(
    form=st.sampled_from(["with_partitioning", "kernel_metadata"]),
    names=st.sampled_from(sorted(NAMES)),
    mesh_from=st.sampled_from(["metadata", "set_mesh", "both", "none"]),
    eager=st.booleans(),
    mode=st.sampled_from(sorted(MODES)),
)
def test_eval_shape_gives_abstract_variables_the_sharding_of_their_mesh_as_flax(
    nnx: Any, flax_nnx: Any, form: str, names: str, mesh_from: str, eager: bool, mode: str
) -> None:
    mesh = jax.sharding.Mesh(jax.devices(), (AXIS,))

    def scenario(nnx: Any) -> Any:
        with contextlib.ExitStack() as stack:
            if mesh_from in ("set_mesh", "both"):
                stack.enter_context(jax.set_mesh(mesh))
            stack.enter_context(nnx.use_eager_sharding(eager))
            stack.enter_context(nnx.logical_axis_rules([("rows", AXIS)]))
            on_metadata = mesh if mesh_from in ("metadata", "both") else None
            model = nnx.eval_shape(lambda: _linear(nnx, form, NAMES[names], on_metadata), **MODES[mode])
        return {name: str(getattr(model, name).get_value()) for name in ("kernel", "bias")}, model

    assert_same(flax_nnx, nnx, scenario)
