"""Laws of the sharding helpers on a one-device mesh: under ``logical_axis_rules`` each
logical sharding name a rule names becomes its mesh axes and the others stay as they are;
``abstract_with_sharding`` attaches ``NamedSharding(mesh, P(*out_sharding))`` to the
abstract Variables that carry ``out_sharding`` (its docstring's example);
``get_abstract_model`` gives the graphdef and abstract state of what ``init_fn`` builds,
shapes and shardings included, without building it."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("property")

MESH_AXES = ("a", "b")
OUT_SHARDINGS = st.tuples(st.sampled_from([None, "a"]), st.sampled_from([None, "b"]))
"""A kernel's ``out_sharding``: each of its two axes on its own mesh axis, or replicated."""


def _mesh() -> jax.sharding.Mesh:
    return jax.make_mesh((1, 1), MESH_AXES, axis_types=(jax.sharding.AxisType.Auto,) * 2)


@pytest.mark.apis("logical_axis_rules")
@given(
    names=st.tuples(st.sampled_from(["embed", "mlp", None]), st.sampled_from(["embed", "mlp", None])),
    rules=st.lists(
        st.tuples(st.sampled_from(["embed", "mlp"]), st.sampled_from(["data", "model", ("data", "model"), None])),
        unique_by=lambda rule: rule[0],
        max_size=2,
    ),
)
def test_logical_axis_rules_map_the_names_they_rule_and_keep_the_others(
    nnx: Any, names: tuple[str | None, str | None], rules: list[tuple[str, Any]]
) -> None:
    with nnx.use_eager_sharding(False):
        layer = nnx.Linear(2, 3, kernel_metadata={"out_sharding": names}, rngs=nnx.Rngs(0))
        with nnx.logical_axis_rules(rules):
            inside = nnx.get_partition_spec(nnx.state(layer))
        outside = nnx.get_partition_spec(nnx.state(layer))
    mapping = dict(rules)
    expected = jax.P(*(mapping.get(name, name) for name in names))
    assert inside["kernel"].get_value() == expected, (
        f"the kernel's partition spec under logical_axis_rules({rules}): expected {expected}, got "
        f"{inside['kernel'].get_value()}"
    )
    assert outside["kernel"].get_value() == jax.P(*names), (
        f"the kernel's partition spec once the rules are left: expected {jax.P(*names)}, got "
        f"{outside['kernel'].get_value()}"
    )


def _linear(nnx: Any, out_sharding: tuple[str | None, ...]) -> Any:
    return nnx.Linear(4, 6, rngs=nnx.Rngs(0), kernel_metadata={"out_sharding": out_sharding})


@pytest.mark.apis("abstract_with_sharding")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # abstract_with_sharding, in favour of as_abstract
@given(out_sharding=OUT_SHARDINGS)
def test_abstract_with_sharding_attaches_the_out_sharding_on_the_mesh(
    nnx: Any, out_sharding: tuple[str | None, ...]
) -> None:
    with jax.set_mesh(_mesh()):
        abstract = nnx.abstract_with_sharding(nnx.eval_shape(lambda: _linear(nnx, out_sharding)))
    kernel = abstract.kernel.get_value()
    assert isinstance(kernel, jax.ShapeDtypeStruct) and kernel.shape == (4, 6), (
        f"the abstract kernel: expected a ShapeDtypeStruct of shape (4, 6), got {kernel!r}"
    )
    assert isinstance(kernel.sharding, jax.sharding.NamedSharding) and kernel.sharding.spec == jax.P(*out_sharding), (
        f"the abstract kernel's sharding: expected NamedSharding(mesh, {jax.P(*out_sharding)}), got {kernel.sharding!r}"
    )
    axes = tuple(kernel.sharding.mesh.axis_names)
    assert axes == MESH_AXES, f"the sharding's mesh axes: expected {MESH_AXES}, got {axes}"


@pytest.mark.apis("get_abstract_model")
@given(out_sharding=OUT_SHARDINGS, sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)))
def test_get_abstract_model_gives_the_graphdef_and_sharded_abstract_state(
    nnx: Any, out_sharding: tuple[str | None, ...], sizes: tuple[int, int]
) -> None:
    mesh = _mesh()
    graphdef, state = nnx.get_abstract_model(
        lambda: nnx.Linear(*sizes, rngs=nnx.Rngs(0), kernel_metadata={"out_sharding": out_sharding}), mesh
    )
    assert isinstance(graphdef, nnx.GraphDef), (
        f"get_abstract_model's first result: expected a GraphDef, got {type(graphdef).__name__}"
    )
    shapes = {name: state[name].get_value().shape for name in ("kernel", "bias")}
    assert shapes == {"kernel": sizes, "bias": sizes[1:]}, (
        f"the abstract shapes of Linear{sizes}: expected kernel {sizes}, bias {sizes[1:]}, got {shapes}"
    )
    sharding = state["kernel"].get_value().sharding
    assert sharding.spec == jax.P(*out_sharding) and sharding.mesh.shape == mesh.shape, (
        f"the abstract kernel's sharding: expected {jax.P(*out_sharding)} on the given mesh, got {sharding!r}"
    )
    model = nnx.merge(graphdef, state)
    assert isinstance(model, nnx.Linear), (
        f"merge(*get_abstract_model(init_fn, mesh)): expected a Linear, got {type(model).__name__}"
    )


class _Shaped:
    """A leaf with a ``shape`` and nothing else of an array."""

    shape = (2,)


class _Typed:
    """A leaf with a ``dtype`` and nothing else of an array."""

    dtype = "float32"


LEAVES = {
    "an array": lambda: jax.numpy.ones(2),
    "a NumPy dtype": lambda: np.dtype("float32"),
    "an object with a shape only": _Shaped,
    "an object with a dtype only": _Typed,
    "a JAX scalar type": lambda: jax.numpy.float32,
    "a Python int": lambda: 3,
}


@pytest.mark.kind("differential")
@pytest.mark.apis("get_partition_spec")
@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_get_partition_spec_gives_a_leaf_that_is_no_variable_flax_s_spec(nnx: Any, flax_nnx: Any, leaf: str) -> None:
    """A leaf with a ``shape`` gets an empty PartitionSpec, any other None, as in flax."""
    assert_same(flax_nnx, nnx, lambda n: str(n.get_partition_spec({"leaf": LEAVES[leaf]()})))
