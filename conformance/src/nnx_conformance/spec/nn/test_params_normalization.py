"""The normalization layers' keywords that the other tests leave at their defaults:
initializers, metadata, custom ``promote_dtype`` functions (called as flax calls them),
feature and reduction axes, statistics across a named axis of ``nnx.vmap`` or, in
groups, of ``nnx.pmap``, and the weight and spectral wrappers' options. Each case is
built by flax.nnx and the implementation from a drawn seed and compared output for
output, state for state and gradient for gradient, bit for bit."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings

from nnx_conformance.testing import strategies
from nnx_conformance.testing.strategies.callables import (
    NORMAL,
    OptionCase,
    Promotion,
    assert_runs_as_in_flax,
)

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/normalization")]

AXIS = "batch"


def _initialized(nnx: Any, has_bias: bool = True) -> dict[str, Any]:
    """Random scale (and bias) initializers, metadata on both, and a recording promotion."""
    options = {"scale_init": NORMAL, "scale_metadata": {"s": 1}, "promote_dtype": Promotion(jnp.float32)}
    if has_bias:
        options |= {"bias_init": NORMAL, "bias_metadata": {"b": 2}}
    return options


def _across_vmap(nnx: Any, layer: Any, x: Any) -> Any:
    """The layer on each row of ``x`` under ``nnx.vmap`` named :data:`AXIS`, the layer broadcast."""
    return nnx.vmap(lambda layer, x: layer(x), in_axes=(None, 0), axis_name=AXIS)(layer, x)


CASES = (
    OptionCase("BatchNorm initialized, with metadata and promote_dtype", "BatchNorm", (4,), _initialized, (2, 3, 4)),
    OptionCase(
        "GroupNorm initialized, slow variance, reduced over the last axes",
        "GroupNorm",
        (4,),
        lambda nnx: {"num_groups": 2, "use_fast_variance": False, "reduction_axes": (-2, -1), **_initialized(nnx)},
        (2, 3, 4),
    ),
    OptionCase(
        "InstanceNorm initialized, bfloat16 parameters, slow variance",
        "InstanceNorm",
        (4,),
        lambda nnx: {"param_dtype": jnp.bfloat16, "use_fast_variance": False, **_initialized(nnx)},
        (2, 3, 4),
    ),
    OptionCase(
        "LayerNorm initialized, large epsilon, feature axes",
        "LayerNorm",
        (3,),
        lambda nnx: {"epsilon": 0.5, "reduction_axes": (-2, -1), "feature_axes": -2, **_initialized(nnx)},
        (2, 3, 4),
    ),
    OptionCase(
        "RMSNorm initialized, reduction and feature axes",
        "RMSNorm",
        (3,),
        lambda nnx: {"reduction_axes": (-2, -1), "feature_axes": -2, **_initialized(nnx, has_bias=False)},
        (2, 3, 4),
    ),
    *(
        OptionCase(
            f"{layer} with statistics across a vmap axis",
            layer,
            (4,),
            lambda nnx, kw=kw: {"axis_name": AXIS, **kw},
            (3, 2, 4),
            call=_across_vmap,
        )
        for layer, kw in (
            ("BatchNorm", {}),
            ("LayerNorm", {}),
            ("RMSNorm", {}),
            ("InstanceNorm", {}),
            ("GroupNorm", {"num_groups": 2}),
        )
    ),
    OptionCase(
        "WeightNorm without scale, initialized, large epsilon",
        "WeightNorm",
        (),
        lambda nnx: {"layer_instance": nnx.Linear(3, 4, rngs=nnx.Rngs(1)), "use_scale": False, "epsilon": 0.5},
        (2, 3),
    ),
    OptionCase(
        "WeightNorm with a constant scale",
        "WeightNorm",
        (),
        lambda nnx: {
            "layer_instance": nnx.Linear(3, 4, rngs=nnx.Rngs(1)),
            "scale_init": jax.nn.initializers.constant(2.0),
        },
        (2, 3),
    ),
    OptionCase(
        "SpectralNorm without updates, large epsilon",
        "SpectralNorm",
        (),
        lambda nnx: {"layer_instance": nnx.Linear(3, 4, rngs=nnx.Rngs(1)), "update_stats": False, "epsilon": 0.5},
        (2, 3),
    ),
)


@pytest.mark.apis(
    "BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "WeightNorm", "SpectralNorm", "vmap"
)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@settings(max_examples=3)
@given(seed=strategies.seeds, input_seed=strategies.seeds)
def test_a_normalization_keyword_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, case: OptionCase, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(case.input_shape, input_seed)
    assert_runs_as_in_flax(flax_nnx, nnx, case.scenario(seed, x))


GROUPS = [[0, 1], [2, 3]]
"""Device groups of a four-device ``nnx.pmap`` that statistics are computed within."""


@pytest.mark.multi_device
@pytest.mark.apis("BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "pmap")
@pytest.mark.parametrize("layer", ["BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm"])
@settings(max_examples=2)
@given(input_seed=strategies.seeds)
def test_normalization_statistics_within_device_groups_are_flax_s(
    nnx: Any, flax_nnx: Any, layer: str, input_seed: int
) -> None:
    x = strategies.layer_input((4, 2, 4), input_seed)
    devices = jax.devices()[:4]

    def scenario(nnx: Any) -> Any:
        extra = {"num_groups": 2} if layer == "GroupNorm" else {}
        norm = getattr(nnx, layer)(4, axis_name=AXIS, axis_index_groups=GROUPS, rngs=nnx.Rngs(0), **extra)
        y = nnx.pmap(lambda norm, x: norm(x), in_axes=(None, 0), axis_name=AXIS, devices=devices)(norm, x)
        return y, nnx.state(norm)

    assert_runs_as_in_flax(flax_nnx, nnx, scenario)
