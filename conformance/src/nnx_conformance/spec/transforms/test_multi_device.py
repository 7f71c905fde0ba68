"""Laws of the NNX transforms over several devices: sharded computations match the
unsharded ones, and state lands on the sharding its partitioning metadata names.

Every test uses all of JAX's devices (eight virtual CPU devices in a suite run) on one
mesh axis; array sides are multiples of the device count.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from nnx_conformance.testing import strategies

pytestmark = [pytest.mark.kind("property"), pytest.mark.multi_device]

AXIS = "model"


def device_mesh() -> jax.sharding.Mesh:
    """A one-axis mesh over every device JAX has."""
    return jax.sharding.Mesh(jax.devices(), (AXIS,))


def partitioned_linear(nnx: Any) -> Any:
    """A Linear(4, 2 * devices) whose kernel and bias carry ``with_partitioning``
    metadata on their output axis, created unsharded (eager sharding off)."""
    features = 2 * len(jax.devices())
    with nnx.use_eager_sharding(False):
        return nnx.Linear(
            4,
            features,
            kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, AXIS)),
            bias_init=nnx.with_partitioning(nnx.initializers.normal(), (AXIS,)),
            rngs=nnx.Rngs(0),
        )


def assert_on_the_partition_sharding(model: Any, mesh: jax.sharding.Mesh, context: str) -> None:
    """Each Variable's array is on NamedSharding(mesh, the spec its metadata names)."""
    __tracebackhide__ = True
    expected = {"kernel": P(None, AXIS), "bias": P(AXIS)}
    for name, spec in expected.items():
        sharding = getattr(model, name)[...].sharding
        assert sharding == NamedSharding(mesh, spec), (
            f"{context}: {name} is on {sharding}, expected NamedSharding over {len(jax.devices())} devices with {spec}"
        )


@pytest.mark.graph_mode("graph")  # StateSharding prefixes need graph mode with graph updates
@pytest.mark.apis("shard_map", "StateSharding")
def test_shard_map_with_state_sharding_matches_the_unsharded_computation(nnx: Any) -> None:
    count = len(jax.devices())
    w = nnx.Param(jnp.arange(2 * count, dtype="float32"))
    model = strategies.classes(nnx).node(w=w, b=nnx.BatchStat(jnp.asarray(2.0)))
    x = jnp.arange(2 * count, dtype="float32") + 1
    # Params are split over the mesh axis, everything else is replicated.
    spec = nnx.StateSharding({nnx.Param: P(AXIS), ...: P()})

    def local(m: Any, x: Any) -> tuple[Any, Any]:
        y = x * m.w[...] + m.b[...]
        return y, jax.lax.psum(jnp.sum(x * m.w[...]), AXIS)

    sharded = nnx.shard_map(local, mesh=device_mesh(), in_specs=(spec, P(AXIS)), out_specs=(P(AXIS), P()))
    y, total = sharded(model, x)
    expected_y = x * model.w[...] + 2.0
    expected_total = jnp.sum(x * model.w[...])
    np.testing.assert_allclose(
        np.asarray(y),
        np.asarray(expected_y),
        rtol=1e-6,
        err_msg=f"the sharded x * w + b gave {y}, unsharded it is {expected_y}",
    )
    assert float(total) == pytest.approx(float(expected_total)), (
        f"psum over {count} shards of sum(x * w) gave {total}, unsharded it is {expected_total}"
    )
    assert y.sharding == NamedSharding(device_mesh(), P(AXIS)), f"the output is on {y.sharding}, expected P({AXIS!r})"


@pytest.mark.graph_mode("graph")  # StateSharding prefixes need graph mode with graph updates
@pytest.mark.apis("jit", "get_partition_spec", "get_named_sharding", "with_partitioning", "StateSharding")
def test_jit_of_a_module_with_named_shardings_puts_each_variable_on_its_partition(nnx: Any) -> None:
    mesh = device_mesh()
    model, unsharded = partitioned_linear(nnx), partitioned_linear(nnx)
    state = nnx.state(model)
    specs = nnx.get_partition_spec(state)
    assert (specs["kernel"].get_value(), specs["bias"].get_value()) == (P(None, AXIS), P(AXIS)), (
        f"get_partition_spec gave {specs}, expected kernel P(None, {AXIS!r}) and bias P({AXIS!r})"
    )
    shardings = nnx.StateSharding(nnx.get_named_sharding(state, mesh))
    x = jnp.arange(8, dtype="float32").reshape(2, 4)
    out = NamedSharding(mesh, P(None, AXIS))
    forward = nnx.jit(
        lambda m, x: (m, m(x)), in_shardings=(shardings, NamedSharding(mesh, P())), out_shardings=(shardings, out)
    )
    returned, y = forward(model, x)
    assert returned is model, "nnx.jit returned a different Module object than it was given"
    assert_on_the_partition_sharding(model, mesh, "after nnx.jit with in/out shardings")
    assert y.sharding == out, f"the output is on {y.sharding}, expected {out}"
    expected = unsharded(x)
    np.testing.assert_allclose(
        np.asarray(y),
        np.asarray(expected),
        rtol=1e-5,
        err_msg=f"the sharded forward pass gave {y}, unsharded it is {expected}",
    )


@pytest.mark.graph_mode(
    "graph"
)  # the function returns its input State's Variables, which tree mode refuses as aliasing
@pytest.mark.apis("jit", "split", "merge", "get_named_sharding", "with_partitioning")
def test_jit_of_a_state_with_named_shardings_puts_each_variable_on_its_partition(nnx: Any) -> None:
    mesh = device_mesh()
    graphdef, state = nnx.split(partitioned_linear(nnx))
    # jit takes one sharding per whole Variable: the State of NamedShardings, Variables stripped.
    shardings = jax.tree.map(
        lambda v: v.get_value(),
        nnx.get_named_sharding(state, mesh),
        is_leaf=lambda leaf: isinstance(leaf, nnx.Variable),
    )
    x = jnp.arange(8, dtype="float32").reshape(2, 4)
    out = NamedSharding(mesh, P(None, AXIS))
    forward = nnx.jit(
        lambda s, x: (s, nnx.merge(graphdef, s)(x)),
        in_shardings=(shardings, NamedSharding(mesh, P())),
        out_shardings=(shardings, out),
    )
    new_state, y = forward(state, x)
    assert_on_the_partition_sharding(nnx.merge(graphdef, new_state), mesh, "after nnx.jit of a State")
    expected = nnx.merge(graphdef, state)(x)
    np.testing.assert_allclose(
        np.asarray(y),
        np.asarray(expected),
        rtol=1e-5,
        err_msg=f"the sharded forward pass gave {y}, unsharded it is {expected}",
    )


@pytest.mark.apis("pmap", "vmap", "split_rngs", "Rngs")
def test_pmap_with_split_rngs_gives_distinct_keys_per_device_and_the_vmap_result(nnx: Any) -> None:
    count = len(jax.devices())
    xs = jnp.arange(2 * count, dtype="float32").reshape(count, 2)

    def noisy(rngs: Any, x: Any) -> tuple[Any, Any]:
        key = rngs.noise()
        return jax.random.key_data(key), x + jax.random.uniform(key, x.shape)

    def mapped(transform: Any, rngs: Any) -> tuple[Any, Any]:
        extra = {"axis_size": count} if transform is nnx.pmap else {}
        return nnx.split_rngs(splits=count)(transform(noisy, in_axes=(0, 0), **extra))(rngs, xs)

    pmap_rngs, vmap_rngs = nnx.Rngs(noise=3), nnx.Rngs(noise=3)
    keys, ys = mapped(nnx.pmap, pmap_rngs)
    vmap_keys, vmap_ys = mapped(nnx.vmap, vmap_rngs)
    rows = {tuple(np.asarray(row).ravel().tolist()) for row in keys}
    assert len(rows) == count, f"nnx.pmap over {count} devices drew {len(rows)} distinct keys: {keys}"
    assert len(ys.sharding.device_set) == count, f"the pmap output lives on {ys.sharding.device_set}"
    np.testing.assert_array_equal(
        np.asarray(keys),
        np.asarray(vmap_keys),
        err_msg="nnx.pmap and nnx.vmap drew different keys from the same split Rngs",
    )
    np.testing.assert_allclose(
        np.asarray(ys), np.asarray(vmap_ys), rtol=1e-6, err_msg=f"nnx.pmap gave {ys}, nnx.vmap gave {vmap_ys}"
    )
    counts = (int(pmap_rngs.noise.count[...]), int(vmap_rngs.noise.count[...]))
    assert counts == (1, 1), (
        f"after one split call the noise streams count {counts}, expected (1, 1): split_rngs draws from each stream "
        f"once"
    )
