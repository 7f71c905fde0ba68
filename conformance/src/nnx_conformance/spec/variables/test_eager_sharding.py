"""Differential tests of eager sharding at Variable creation, beside flax.nnx.

flax 0.12.12 places a new Variable's value when eager sharding is on and its
``out_sharding`` is not empty (an empty tuple or ``P()`` places nothing, even without a
mesh): without a mesh (``jax.set_mesh`` or ``mesh`` metadata) and not a NamedSharding, it
raises ValueError; otherwise every leaf of the value is placed as JAX takes it (a NumPy
array or a Python number becomes a JAX array, or fails JAX's rank check; a string fails as
no JAX type), for ref and hijax Variables too. The docs (the eager-sharding FLIP the
message links) describe arrays only; what the other values do is flax's observed behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("variables")]

VALUES: dict[str, Callable[[], Any]] = {
    "a JAX vector": lambda: jnp.ones(2),
    "a JAX scalar": lambda: jnp.ones(()),
    "a NumPy vector": lambda: np.ones(2, np.float32),
    "a Python int": lambda: 1,
    "None": lambda: None,
    "a list of vectors": lambda: [jnp.ones(2), np.ones(2, np.float32)],
    "a string": lambda: "s",
}
SHARDINGS: dict[str, Callable[[Mesh], Any]] = {
    "an empty tuple": lambda mesh: (),
    "P()": lambda mesh: PartitionSpec(),
    "(None,)": lambda mesh: (None,),
    "('x',)": lambda mesh: ("x",),
    "a NamedSharding": lambda mesh: NamedSharding(mesh, PartitionSpec()),
}
PLACES = ["no mesh", "jax.set_mesh", "mesh metadata"]
KINDS = {"plain": {}, "ref": {"ref": True}, "hijax": {"hijax": True}}


def _made(nnx: Any, value: str, sharding: str, place: str, kind: str) -> Any:
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    options = {"out_sharding": SHARDINGS[sharding](mesh), **KINDS[kind]}
    if place == "mesh metadata":
        options["mesh"] = mesh
    if place == "jax.set_mesh":
        with jax.set_mesh(mesh):
            variable = nnx.Param(VALUES[value](), **options)
    else:
        variable = nnx.Param(VALUES[value](), **options)
    stored = variable.get_value()
    specs = jax.tree.map(lambda leaf: str(getattr(getattr(leaf, "sharding", None), "spec", None)), stored)
    return jax.tree.map(lambda leaf: type(leaf).__name__, stored), specs, stored


# A NamedSharding under jax.set_mesh fails an internal assertion of flax's (AssertionError):
# a crash, not a rule, so that pair is not drawn.
PLACED = [
    (sharding, place)
    for sharding in sorted(SHARDINGS)
    for place in PLACES
    if (sharding, place) != ("a NamedSharding", "jax.set_mesh")
]


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize(("sharding", "place"), PLACED, ids=[f"{sharding} under {place}" for sharding, place in PLACED])
@pytest.mark.parametrize("value", sorted(VALUES))
def test_a_new_variable_places_its_value_by_out_sharding_as_flax(
    nnx: Any, flax_nnx: Any, value: str, sharding: str, place: str
) -> None:
    assert_same(flax_nnx, nnx, lambda n: _made(n, value, sharding, place, "plain"))


@pytest.mark.apis("Variable", "Param")
@pytest.mark.parametrize("kind", ["ref", "hijax"])
@pytest.mark.parametrize("value", ["a JAX vector", "a NumPy vector"])
def test_a_new_ref_or_hijax_variable_is_placed_as_flax_s(nnx: Any, flax_nnx: Any, value: str, kind: str) -> None:
    assert_same(flax_nnx, nnx, lambda n: _made(n, value, "('x',)", "mesh metadata", kind))
