"""The keywords of every Variable type, which the other tests leave at their defaults for
most types: ``hijax``, ``ref`` and ``eager_sharding`` set either way, and metadata; and
the initializer wrappers' keywords: with_metadata's hooks (``on_set_value``,
``on_get_value``, ``on_create_value``, ``on_add_axis``, ``on_remove_axis``) and
with_partitioning's ``mesh`` and metadata. Each drawn Variable is built by flax.nnx and
the implementation, updated in place and through ``set_value``, and compared value for
value and metadata for metadata."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx_conformance.testing.strategies.callables import assert_runs_as_in_flax

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("variables")]

VARIABLE_TYPES = (
    "Variable",
    "Param",
    "BatchStat",
    "Cache",
    "Intermediate",
    "LoRAParam",
    "OptArray",
    "OptState",
    "Perturbation",
    "RngCount",
    "RngKey",
    "RngState",
)


@pytest.mark.apis(*VARIABLE_TYPES)
@pytest.mark.parametrize("variable_type", VARIABLE_TYPES)
@settings(max_examples=4)
@given(
    hijax=st.booleans(),
    ref=st.booleans(),
    eager_sharding=st.booleans(),
    tag=st.integers(0, 3),
    values=st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=3),
)
def test_a_variable_built_with_each_keyword_behaves_as_flax_s(
    nnx: Any,
    flax_nnx: Any,
    variable_type: str,
    hijax: bool,
    ref: bool,
    eager_sharding: bool,
    tag: int,
    values: list[float],
) -> None:
    initial = np.asarray(values, np.float32)

    def scenario(nnx: Any) -> Any:
        variable = getattr(nnx, variable_type)(
            initial.copy(), hijax=hijax, ref=ref, eager_sharding=eager_sharding, tag=tag
        )
        built = (
            isinstance(variable.get_raw_value(), jax.Ref),
            sorted(variable.get_metadata().items()),
            np.array(variable[...]),
        )
        variable[...] = variable[...] + 1
        variable.set_value(variable.get_value() * 2)
        return built, sorted(variable.get_metadata().items()), variable[...]

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


class Hooks:
    """The five hooks of ``nnx.with_metadata``: each records its call and changes the value
    in a way of its own, so that the result shows which hooks ran, in which order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_create_value(self, variable: Any, value: Any) -> Any:
        self.calls.append("create")
        return value * 3

    def on_get_value(self, variable: Any, value: Any) -> Any:
        self.calls.append("get")
        return value + 1

    def on_set_value(self, variable: Any, value: Any) -> Any:
        self.calls.append("set")
        return value * 2

    def on_add_axis(self, variable: Any, index: int, params: Any) -> Any:
        self.calls.append(f"add axis {index}")
        return variable

    def on_remove_axis(self, variable: Any, index: int, params: Any) -> Any:
        self.calls.append(f"remove axis {index}")
        return variable

    def options(self) -> dict[str, Any]:
        """The keywords to pass ``nnx.with_metadata``."""
        return {
            name: getattr(self, name)
            for name in ("on_create_value", "on_get_value", "on_set_value", "on_add_axis", "on_remove_axis")
        }


def _hooked_linear(nnx: Any, seed: int, hooks: Hooks) -> Any:
    kernel_init = nnx.with_metadata(nnx.initializers.lecun_normal(), **hooks.options(), tag="hooked")
    return nnx.Linear(2, 3, kernel_init=kernel_init, rngs=nnx.Rngs(seed))


@pytest.mark.apis("with_metadata", "VariableMetadata")
@settings(max_examples=3)
@given(seed=st.integers(0, 2**16), new=st.integers(-3, 3).map(float))
def test_with_metadata_hooks_run_as_in_flax(nnx: Any, flax_nnx: Any, seed: int, new: float) -> None:
    def scenario(nnx: Any) -> Any:
        hooks = Hooks()
        layer = _hooked_linear(nnx, seed, hooks)
        read = layer.kernel[...]
        layer.kernel[...] = jnp.full((2, 3), new)
        return read, layer.kernel.get_raw_value(), layer(jnp.ones((1, 2))), hooks.calls

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_metadata", "VariableMetadata")
def test_a_variable_keeps_its_with_metadata_hooks_in_its_metadata_as_flax_does(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        hooks = Hooks()
        return sorted(_hooked_linear(nnx, 0, hooks).kernel.get_metadata())

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_partitioning")
@settings(max_examples=3)
@given(seed=st.integers(0, 2**16), names=st.sampled_from([(None, "model"), ("model", None)]))
def test_with_partitioning_on_a_given_mesh_with_metadata_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, seed: int, names: tuple[str | None, ...]
) -> None:
    mesh = jax.make_mesh((1,), ("model",))

    def scenario(nnx: Any) -> Any:
        kernel_init = nnx.with_partitioning(nnx.initializers.lecun_normal(), names, mesh=mesh, tag="sharded")
        layer = nnx.Linear(2, 3, kernel_init=kernel_init, rngs=nnx.Rngs(seed))
        return layer.kernel, str(layer.kernel[...].sharding.spec)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_metadata", "vmap", "scan")
@pytest.mark.graph_mode("graph")  # flax 0.12.12 moves partition names only with graph updates (flax-tree.txt)
@pytest.mark.parametrize("transform", ["vmap", "scan"])
def test_axis_hooks_run_when_a_transform_moves_the_partition_name_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str
) -> None:
    """``on_remove_axis`` runs when a transform given ``transform_metadata`` slices a
    Variable's partitioned axis on the way in, ``on_add_axis`` when it stacks it on the way out."""

    def scenario(nnx: Any) -> Any:
        hooks = Hooks()
        kernel = nnx.Param(jnp.ones((3, 2)), sharding_names=("x", None), eager_sharding=False, **hooks.options())
        hooks.calls.clear()  # the value is given, not made: keep only the calls the transform makes
        inside: list[Any] = []
        metadata = {nnx.PARTITION_NAME: "x"}
        if transform == "vmap":

            @nnx.vmap(in_axes=0, out_axes=0, transform_metadata=metadata)
            def body(kernel: Any) -> Any:
                inside.append(kernel.get_metadata().get("out_sharding"))
                return kernel[...].sum()

            out = body(kernel)
        else:

            @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), transform_metadata=metadata)
            def body(total: Any, kernel: Any) -> Any:
                inside.append(kernel.get_metadata().get("out_sharding"))
                return total + kernel[...].sum(), kernel[...]

            out = body(jnp.zeros(()), kernel)
        return out, hooks.calls, inside, kernel.get_metadata().get("out_sharding")

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
