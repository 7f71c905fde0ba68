"""Differential tests of the normalization layers: the same parameters, batch statistics,
outputs and gradients as flax.nnx, bit for bit, over two calls (so BatchNorm's running
averages are compared after each update), masks and the wrappers' precision included."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/normalization")]

NORMS = ("BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm")


@pytest.mark.apis(*NORMS)
@given(data=st.data(), layer=st.sampled_from(NORMS), seed=strategies.seeds, input_seed=strategies.seeds)
def test_normalization_parameters_statistics_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, data: st.DataObject, layer: str, seed: int, input_seed: int
) -> None:
    drawn = data.draw(strategies.norm_args(layer), label=f"{layer} arguments")
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case(layer, drawn, seed, x, calls=2))


@pytest.mark.apis("GroupNorm")
@given(
    num_groups=st.sampled_from([1, 2]),
    mask_shape=st.sampled_from([(2, 3, 4), (1, 3, 4), (3, 4), (1, 1, 4)]),
    seed=strategies.seeds,
)
def test_group_norm_takes_any_mask_broadcastable_to_the_input(
    nnx: Any, flax_nnx: Any, num_groups: int, mask_shape: tuple[int, ...], seed: int
) -> None:
    x = strategies.layer_input((2, 3, 4), seed)
    mask = np.random.default_rng(seed).integers(0, 4, mask_shape) > 0

    def scenario(nnx: Any) -> Any:
        layer = nnx.GroupNorm(4, num_groups=num_groups, rngs=nnx.Rngs(0))
        return layer(x, mask=mask), nnx.grad(lambda m, x: jnp.sum(m(x, mask=mask) ** 2), argnums=(0, 1))(layer, x)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("BatchNorm")
@given(seed=strategies.seeds, momentum=st.sampled_from([0.0, 0.9]), dtype=st.sampled_from(strategies.NORM_DTYPES))
def test_batch_norm_running_statistics_carry_no_gradient(
    nnx: Any, flax_nnx: Any, seed: int, momentum: float, dtype: Any
) -> None:
    x = strategies.layer_input((3, 4), seed)

    def scenario(nnx: Any) -> Any:
        layer = nnx.BatchNorm(4, momentum=momentum, dtype=dtype, rngs=nnx.Rngs(0))

        def loss(layer: Any, x: Any) -> Any:
            y = layer(x)
            return jnp.sum(y.astype(jnp.float32) ** 2) + jnp.sum(layer.mean[...]) + jnp.sum(layer.var[...])

        return nnx.grad(loss, argnums=(0, 1))(layer, x), nnx.state(layer)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("WeightNorm", "SpectralNorm")
@given(
    wrapper=st.sampled_from(["WeightNorm", "SpectralNorm"]),
    inner=st.sampled_from(["Linear", "Conv"]),
    layer_dtypes=strategies.dtype_args(),
    wrapper_dtypes=strategies.dtype_args(),
    calls=st.integers(1, 2),
    seed=strategies.seeds,
)
def test_weight_and_spectral_norm_rescale_in_flax_precision(
    nnx: Any,
    flax_nnx: Any,
    wrapper: str,
    inner: str,
    layer_dtypes: dict[str, Any],
    wrapper_dtypes: dict[str, Any],
    calls: int,
    seed: int,
) -> None:
    x = strategies.layer_input((2, 5, 3), seed)

    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(seed)
        layer = (
            nnx.Linear(3, 4, rngs=rngs, **layer_dtypes)
            if inner == "Linear"
            else nnx.Conv(3, 4, 3, rngs=rngs, **layer_dtypes)
        )
        wrapped = getattr(nnx, wrapper)(layer, rngs=rngs, **wrapper_dtypes)
        outputs = [wrapped(x) for _ in range(calls)]
        return outputs, nnx.state(wrapped)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("WeightNorm")
@pytest.mark.documented(None)
@pytest.mark.parametrize("use_scale", [True, False], ids=["with scales", "without scales"])
def test_weight_norm_holds_its_scales_as_flax_does(nnx: Any, flax_nnx: Any, use_scale: bool) -> None:
    # without scales flax keeps None, a static attribute: in tree mode part of the layer's pytree
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(0)
        wrapped = nnx.WeightNorm(nnx.Linear(3, 4, rngs=rngs), use_scale=use_scale, rngs=rngs)
        return wrapped.scales, nnx.state(wrapped)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("GroupNorm")
@given(features=st.sampled_from([4, 6, 8, 12]), group_size=st.sampled_from([2, 3, 4]))
def test_group_norm_by_group_size_acts_as_in_flax(nnx: Any, flax_nnx: Any, features: int, group_size: int) -> None:
    """``group_size`` instead of ``num_groups``: features not a multiple of it are refused."""

    def scenario(nnx: Any) -> Any:
        layer = nnx.GroupNorm(features, num_groups=None, group_size=group_size, rngs=nnx.Rngs(0))
        return layer(jnp.arange(2.0 * features).reshape(2, features))

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis(*NORMS)
@pytest.mark.documented(None)
@pytest.mark.parametrize("layer", NORMS)
@given(seed=strategies.seeds)
def test_a_normalization_of_complex_inputs_equals_flax(nnx: Any, flax_nnx: Any, layer: str, seed: int) -> None:
    """The statistics of complex inputs use the squared modulus; outputs are complex."""
    real = strategies.layer_input((2, 3, 4), seed)
    x = jnp.asarray(real - 1j * real[::-1], jnp.complex64)

    def scenario(nnx: Any) -> Any:
        options = {"num_groups": 2} if layer == "GroupNorm" else {}
        norm = getattr(nnx, layer)(4, dtype=jnp.complex64, rngs=nnx.Rngs(0), **options)
        return norm(x), norm

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("SpectralNorm")
@pytest.mark.parametrize("kernel", ["zeros", "drawn"])
@pytest.mark.parametrize("n_steps", [0, 1, 3])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_spectral_norm_of_a_zero_or_drawn_kernel_with_any_number_of_steps_acts_as_flax(
    nnx: Any, flax_nnx: Any, kernel: str, n_steps: int, seed: int
) -> None:
    """The output and the stored power-iteration vectors after a call that updates them:
    a zero kernel (its estimated norm is 0) stays zero, and with no power-iteration step
    the estimate comes from the stored vectors as they are."""

    def scenario(n: Any) -> Any:
        init = n.initializers.zeros if kernel == "zeros" else n.initializers.lecun_normal()
        layer = n.Linear(3, 4, kernel_init=init, rngs=n.Rngs(seed))
        wrapped = n.SpectralNorm(layer, n_steps=n_steps, rngs=n.Rngs(seed + 10))
        return wrapped(jnp.linspace(-1.0, 1.0, 6).reshape(2, 3), update_stats=True), n.state(wrapped)

    assert_same(flax_nnx, nnx, scenario)
