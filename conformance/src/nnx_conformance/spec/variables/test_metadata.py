"""Parity of sharding metadata with flax.nnx: ``transform_metadata`` adds and removes
the partition name of the mapped axis (with and without a vmap around it, in graph and
tree mode), ``with_metadata`` initializers carry their metadata into Variables and keep
the initializer's name, ``get_abstract_model`` gives flax's abstract, sharded state, and
``get_partition_spec`` maps each kind of leaf as flax's."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import Mesh

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

TRANSFORMS_GUIDE = (
    "guide:transforms (transform_metadata: the partition of the mapped axis is removed inside and added back)"
)


def _mesh() -> Mesh:
    return Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("a", "b"))


def _sharding(variable: Any) -> Any:
    return variable.get_metadata().get("out_sharding")


def _weights(nnx: Any, shape: tuple[int, ...], sharding: tuple[str | None, ...]) -> Any:
    class Weights(nnx.Module):
        def __init__(self) -> None:
            self.param = nnx.Param(jnp.ones(shape), out_sharding=sharding)

    return Weights()


def _unmapped(nnx: Any, graph: bool) -> Any:
    """transform_metadata alone: the partition ``b`` of axis 0 is removed inside, added back after."""
    seen = []

    @nnx.transform_metadata(in_axes=0, out_axes=0, partition="b", graph=graph)
    def f(m: Any) -> Any:
        seen.append((_sharding(m.param), m.param.shape))
        m.param[...] += 1
        return m.param[...].sum()

    with jax.set_mesh(_mesh()):
        m = _weights(nnx, (2, 3), ("b", "a"))
        y = f(m)
    return seen, y, _sharding(m.param), m.param[...]


def _vmapped(nnx: Any, graph: bool) -> Any:
    """Under vmap over axis 1, as the transforms guide shows it."""
    seen = []

    @nnx.vmap(in_axes=1, out_axes=0, graph=graph)
    @nnx.transform_metadata(in_axes=1, out_axes=0, partition="b", graph=graph)
    def f(m: Any) -> Any:
        seen.append((_sharding(m.param), m.param.shape))
        return m.param[...].sum()

    with jax.set_mesh(_mesh()):
        m = _weights(nnx, (3, 4, 5), ("a", "b", None))
        y = f(m)
    return seen, y, _sharding(m.param)


def _initialized(nnx: Any, graph: bool) -> Any:
    """A Param made under vmap gets the partition of the new axis."""
    seen = []

    @nnx.vmap(out_axes=0, axis_size=2, graph=graph)
    @nnx.transform_metadata(out_axes=0, partition="b", graph=graph)
    def init() -> Any:
        param = nnx.Param(jnp.ones(3), out_sharding=("a",))
        seen.append(_sharding(param))
        return param

    with jax.set_mesh(_mesh()):
        param = init()
    return seen, _sharding(param), param.shape


TRANSFORM_METADATA = {"unmapped": _unmapped, "vmapped": _vmapped, "initialized": _initialized}


@pytest.mark.apis("transform_metadata", "vmap")
@pytest.mark.documented(TRANSFORMS_GUIDE)
@pytest.mark.parametrize("graph", [True, False], ids=["graph_mode", "tree_mode"])
@pytest.mark.parametrize("case", sorted(TRANSFORM_METADATA))
def test_transform_metadata_moves_the_partition_as_flax_does(nnx: Any, flax_nnx: Any, case: str, graph: bool) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: TRANSFORM_METADATA[case](nnx, graph))
    assert outcome.error is None, f"flax runs transform_metadata ({case})"


@pytest.mark.apis("with_metadata", "with_partitioning", "Linear")
@pytest.mark.documented("api variables page: with_metadata wraps an initializer so the Variable gets its metadata")
@given(sharding=st.sampled_from([("a", "b"), ("b", None), (None, None)]), tag=st.sampled_from(["x", "y"]))
def test_with_metadata_initializers_give_flax_variables(nnx: Any, flax_nnx: Any, sharding: Any, tag: str) -> None:
    def scenario(nnx: Any) -> Any:
        init = nnx.with_metadata(nnx.initializers.lecun_normal(), out_sharding=sharding, tag=tag)
        partitioned = nnx.with_partitioning(nnx.initializers.zeros_init(), sharding[::-1])
        with jax.set_mesh(_mesh()):
            m = nnx.Linear(4, 2, kernel_init=init, bias_init=partitioned, rngs=nnx.Rngs(0))
        metadata = {name: variable.get_metadata() for name, variable in (("kernel", m.kernel), ("bias", m.bias))}
        return sorted(metadata["kernel"].items()), sorted(metadata["bias"].items()), m.kernel[...]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_metadata", "with_partitioning")
@pytest.mark.documented(None)
@pytest.mark.parametrize("wrap", ["with_metadata", "with_partitioning"])
def test_a_wrapped_initializer_keeps_the_initializer_s_name_as_in_flax(nnx: Any, flax_nnx: Any, wrap: str) -> None:
    """Its name, qualified name and docstring, and ``__wrapped__`` leads to the initializer."""

    def scenario(nnx: Any) -> Any:
        initializer = nnx.initializers.lecun_normal()
        made = (
            nnx.with_metadata(initializer, tag="t")
            if wrap == "with_metadata"
            else nnx.with_partitioning(initializer, ("a",))
        )
        return made.__name__, made.__qualname__, made.__doc__, getattr(made, "__wrapped__", None) is initializer

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("get_abstract_model", "with_partitioning")
@pytest.mark.documented(None)
@pytest.mark.parametrize("graph", [True, False, None], ids=["graph_mode", "tree_mode", "default_mode"])
def test_get_abstract_model_gives_flax_abstract_sharded_state(nnx: Any, flax_nnx: Any, graph: bool | None) -> None:
    def scenario(nnx: Any) -> Any:
        def init() -> Any:
            kernel_init = nnx.with_partitioning(nnx.initializers.lecun_normal(), ("a", "b"))
            return nnx.Linear(4, 2, kernel_init=kernel_init, rngs=nnx.Rngs(0))

        mesh = Mesh(np.array(jax.devices()[:2]).reshape(2, 1), ("a", "b"))
        graphdef, state = nnx.get_abstract_model(init, mesh, graph=graph)
        abstract = jax.tree.map(lambda x: (x.shape, str(x.dtype), str(getattr(x, "sharding", None))), state)
        return abstract, nnx.merge(graphdef, state)

    assert_same(flax_nnx, nnx, scenario)


PARTITION_LEAVES = {
    "a Variable with out_sharding": lambda nnx: nnx.Param(jnp.ones((2, 2)), out_sharding=("rows", None)),
    "a Variable without": lambda nnx: nnx.BatchStat(jnp.ones(2)),
    "a jax array": lambda nnx: jnp.ones(2),
    "a numpy array": lambda nnx: np.ones(2),
    "a Python scalar": lambda nnx: 3,
    "None": lambda nnx: None,
    "a string": lambda nnx: "text",
}


@pytest.mark.apis("get_partition_spec")
@pytest.mark.documented(None)
@pytest.mark.parametrize("leaf", PARTITION_LEAVES)
def test_get_partition_spec_maps_each_kind_of_leaf_as_flax(nnx: Any, flax_nnx: Any, leaf: str) -> None:
    """A Variable becomes one of its type holding its spec; an array ``P()``; anything else None."""
    assert_same(flax_nnx, nnx, lambda nnx: nnx.get_partition_spec({"leaf": PARTITION_LEAVES[leaf](nnx), "other": 1}))
