"""Parity with flax.nnx of the less common forms of partition metadata: a vmap's
``transform_metadata`` that names a key no Variable has beside the partition name (or no
partition name), arrays mapped beside Variables; ``get_partition_spec`` of a Variable
whose value has no shape; and ``abstract_with_sharding`` of an abstract Variable that
names its own ``mesh`` or takes the context's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented(None)]


def _made_inside(nnx: Any, metadata: dict[str, Any]) -> Any:
    """A Param of shape (3, 4) made under vmap and stacked at axis 2."""

    @nnx.vmap(out_axes=2, axis_size=2, transform_metadata=metadata, graph=True)
    def init() -> Any:
        return nnx.Param(jnp.ones((3, 4)), out_sharding=("a", None), tags=("t",), eager_sharding=False)

    param = init()
    return param.shape, sorted(param.get_metadata().items())


def _mapped_in(nnx: Any, metadata: dict[str, Any]) -> Any:
    """A Module whose Param is mapped over axis 0, returned with an array beside it."""
    seen: list[Any] = []

    @nnx.vmap(in_axes=0, out_axes=0, transform_metadata=metadata, graph=True)
    def step(model: Any) -> Any:
        seen.append(sorted(model.param.get_metadata().items()))
        return model.param[...] * 2, jnp.ones(3)

    model = nnx.Dict(param=nnx.Param(jnp.ones((2, 3)), out_sharding=("b", None), tags=("n", "x"), eager_sharding=False))
    out = step(model)
    return seen, out, sorted(model.param.get_metadata().items())


TRANSFORMS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "a Param made inside": _made_inside,
    "a Module mapped over": _mapped_in,
}
METADATA: dict[str, Callable[[Any], dict[str, Any]]] = {
    "tags, no partition name": lambda nnx: {"tags": "n"},
    "the partition name and a key no Variable has": lambda nnx: {nnx.PARTITION_NAME: "b", "other": "o"},
}


@pytest.mark.apis("vmap", "PARTITION_NAME")
@pytest.mark.parametrize("metadata", METADATA)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_vmap_transform_metadata_moves_the_partition_name_alone_as_flax(
    nnx: Any, flax_nnx: Any, transform: str, metadata: str
) -> None:
    """In graph mode the partition name goes in and out of ``out_sharding`` at the mapped
    axis; a key that no Variable's metadata has changes nothing, and without a partition
    name nothing moves."""
    assert_same(flax_nnx, nnx, lambda nnx: TRANSFORMS[transform](nnx, METADATA[metadata](nnx)))


@pytest.mark.apis("get_partition_spec")
@pytest.mark.parametrize("value", ["a string", "None", "a dict of arrays"])
def test_get_partition_spec_of_a_variable_of_a_value_without_a_shape_is_flax_s(
    nnx: Any, flax_nnx: Any, value: str
) -> None:
    held = {"a string": "text", "None": None, "a dict of arrays": {"a": jnp.ones(2)}}[value]
    assert_same(flax_nnx, nnx, lambda nnx: nnx.get_partition_spec({"v": nnx.Variable(held), "p": nnx.Param(1.0)}))


@pytest.mark.apis("abstract_with_sharding")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # abstract_with_sharding, in favour of as_abstract
@pytest.mark.parametrize("mesh_metadata", [True, False], ids=["its own mesh", "the context's mesh"])
def test_abstract_with_sharding_puts_a_variable_on_its_own_mesh_as_flax(
    nnx: Any, flax_nnx: Any, mesh_metadata: bool
) -> None:
    """An abstract value without a sharding gets one on the Variable's ``mesh`` metadata,
    else on the mesh of the context."""

    def scenario(nnx: Any) -> Any:
        own = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("x", "y"))
        context = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("a", "b"))
        extra = {"mesh": own} if mesh_metadata else {}
        spec = ("x", None) if mesh_metadata else ("a", None)
        abstract = jax.ShapeDtypeStruct((2, 2), jnp.float32)
        tree = nnx.Dict(p=nnx.Param(abstract, out_sharding=spec, eager_sharding=False, **extra))
        with jax.set_mesh(context):
            sharded = nnx.abstract_with_sharding(tree)
        sharding = sharded.p.get_value().sharding
        return type(sharding).__name__, tuple(sharding.mesh.axis_names), str(sharding.spec)

    assert_same(flax_nnx, nnx, scenario)
