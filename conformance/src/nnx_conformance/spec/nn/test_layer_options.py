"""Differential tests of layer options the other fixed cases leave at their defaults: paddings
mixing numbers and pairs, ``strides=None``, kernel masks, initializers carrying metadata,
weight-normalized axes, streams and rngs forms handed to Dropout, RNN and Bidirectional, the
call keywords of Bidirectional and MultiHeadAttention, and RoPE on unbatched inputs; each
built with flax.nnx and the implementation from the same seed and compared state for state
and output for output."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import Case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented(None)]

key = jax.random.key
x3 = jax.random.normal(key(1), (2, 5, 3))
x8 = jax.random.normal(key(1), (2, 5, 8))
x4d = jax.random.normal(key(1), (2, 7, 6, 4))
normal = jax.nn.initializers.normal()


def _checkerboard(shape: tuple[int, ...]) -> jax.Array:
    """A 0/1 mask of ``shape``, every other entry kept."""
    return (jnp.arange(jnp.prod(jnp.array(shape))).reshape(shape) % 2).astype(jnp.float32)


def _grown_weight_norm(n: Any, r: Any) -> Any:
    """A WeightNorm whose wrapped layer gained a kernel after the scales were made."""
    layer = n.WeightNorm(n.Linear(3, 4, rngs=r), rngs=r)
    layer.layer_instance.inner = n.Linear(3, 4, rngs=r)
    return layer


def _grown_spectral_norm(n: Any, r: Any) -> Any:
    """A SpectralNorm whose wrapped layer gained a matrix Param after its statistics were made."""
    layer = n.SpectralNorm(n.Linear(3, 4, rngs=r), rngs=r)
    layer.layer_instance.extra = n.Param(jnp.ones((3, 4)))
    return layer


def _spectral_norm_without_sigma(n: Any, r: Any) -> Any:
    """A SpectralNorm whose kernel's sigma statistic was removed after construction."""
    layer = n.SpectralNorm(n.Linear(3, 4, rngs=r), rngs=r)
    del layer.batch_stats[("kernel", "sigma")]
    return layer


def _spectral_norm_of_a_cube(n: Any, r: Any) -> Any:
    """A SpectralNorm refusing non-matrices whose wrapped layer's kernel became 3D after construction."""
    layer = n.SpectralNorm(n.Linear(3, 4, rngs=r), error_on_non_matrix=True, rngs=r)
    layer.layer_instance.kernel = n.Param(jnp.ones((1, 3, 4)))
    return layer


def _mha_cache_by_view(batch_size: Any, max_length: Any) -> Any:
    """A MultiHeadAttention without cache attributes, viewed in decode mode with these cache sizes."""

    def build(n: Any, r: Any) -> Any:
        layer = n.MultiHeadAttention(2, 8, decode=False, rngs=r)
        del layer.cached_key, layer.cached_value, layer.cache_index
        return n.view(layer, decode=True, batch_size=batch_size, max_length=max_length)

    return build


def _positional_attention(n: Any, r: Any) -> Any:
    """A MultiHeadAttention whose attention function scales each position's output by its input position."""

    def attention(query: Any, key: Any, value: Any, *, input_positions: Any, **kwargs: Any) -> Any:
        return n.dot_product_attention(query, key, value, **kwargs) * input_positions[:, None, None]

    return n.MultiHeadAttention(2, 8, attention_fn=attention, decode=False, rngs=r)


def _bidirectional(n: Any, r: Any, **kwargs: Any) -> Any:
    return n.Bidirectional(n.RNN(n.GRUCell(3, 4, rngs=r)), n.RNN(n.SimpleCell(3, 4, rngs=r)), **kwargs)


def _shared_bidirectional(n: Any, r: Any) -> Any:
    """A Bidirectional whose forward and backward RNN are one object (sharing parameters)."""
    rnn = n.RNN(n.SimpleCell(3, 4, rngs=r))
    return n.Bidirectional(rnn, rnn)


def _carries(n: Any) -> Any:
    """Initial carries of a GRUCell and a SimpleCell of 4 features, batch 2."""
    return jnp.full((2, 4), 0.5), jnp.full((2, 4), -0.5)


CASES = [
    Case("Conv padding of a number and a pair", lambda n, r: n.Conv(4, 3, (3, 3), padding=[1, (0, 2)], rngs=r), x4d),
    Case("Conv strides None", lambda n, r: n.Conv(4, 3, (3, 3), strides=None, rngs=r), x4d),
    Case(
        "Conv with a kernel mask",
        lambda n, r: n.Conv(4, 3, (3, 3), mask=_checkerboard((3, 3, 4, 3)), rngs=r),
        x4d,
        grad=True,
    ),
    Case(
        "ConvTranspose with a kernel mask",
        lambda n, r: n.ConvTranspose(4, 3, (3, 3), mask=_checkerboard((3, 3, 4, 3)), rngs=r),
        x4d,
    ),
    Case(
        "LinearGeneral initializers with metadata",
        lambda n, r: n.LinearGeneral(
            3,
            (4, 2),
            kernel_init=n.with_metadata(normal, note="k"),
            bias_init=n.with_metadata(normal, note="b"),
            rngs=r,
        ),
        x3,
    ),
    Case(
        "LinearGeneral batch axes not leading",
        lambda n, r: n.LinearGeneral(3, 4, batch_axis={1: 5}, rngs=r),
        x3,
    ),
    Case(
        "WeightNorm over every axis of the kernel",
        lambda n, r: n.WeightNorm(n.Linear(3, 4, rngs=r), feature_axes=(0, 1), rngs=r),
        x3,
    ),
    Case(
        "WeightNorm(Linear) no feature axes",
        lambda n, r: n.WeightNorm(n.Linear(3, 4, rngs=r), feature_axes=None, rngs=r),
        x3,
    ),
    Case(
        "WeightNorm without scales over no feature axes",
        lambda n, r: n.WeightNorm(n.Linear(3, 4, rngs=r), feature_axes=None, use_scale=False, rngs=r),
        x3,
    ),
    Case("WeightNorm of a layer that gained a Param", _grown_weight_norm, x3),
    Case("SpectralNorm of a layer that gained a Param", _grown_spectral_norm, x3),
    Case("SpectralNorm refusing a kernel that became 3D", _spectral_norm_of_a_cube, x3),
    Case("SpectralNorm missing a sigma statistic", _spectral_norm_without_sigma, x3),
    Case("InstanceNorm over the batch axis", lambda n, r: n.InstanceNorm(2, feature_axes=(0,), rngs=r), x3),
    Case("Dropout given a stream", lambda n, r: n.Dropout(0.3, rngs=r.dropout), x8, calls=2),
    Case(
        "BatchNorm and Dropout viewed as evaluating",
        lambda n, r: n.view(n.Sequential(n.BatchNorm(8, rngs=r), n.Dropout(0.3, rngs=r)), use_running_average=True),
        x8,
        calls=2,
    ),
    Case(
        "BatchNorm and Dropout viewed as deterministic",
        lambda n, r: n.view(n.Sequential(n.BatchNorm(8, rngs=r), n.Dropout(0.3, rngs=r)), deterministic=True),
        x8,
        calls=2,
    ),
    Case("RNN without rngs", lambda n, r: n.RNN(n.SimpleCell(3, 4, rngs=r), rngs=False), x3),
    Case("RNN on an input of one axis", lambda n, r: n.RNN(n.SimpleCell(3, 4, rngs=r)), jnp.ones((3,))),
    Case("Bidirectional without rngs", lambda n, r: _bidirectional(n, r, rngs=False), x3),
    Case("Bidirectional given a stream", lambda n, r: _bidirectional(n, r, rngs=r.carry), x3, calls=2),
    Case("Bidirectional given a string as rngs", lambda n, r: _bidirectional(n, r, rngs="carry"), x3),
    Case(
        "Bidirectional with call keywords",
        lambda n, r: _bidirectional(n, r),
        x3.swapaxes(0, 1),
        call=lambda n, m, x: m(x, time_major=True, return_carry=True, rngs=n.Rngs(carry=2)),
    ),
    Case(
        "Bidirectional from given carries",
        lambda n, r: _bidirectional(n, r, return_carry=True),
        x3,
        call=lambda n, m, x: m(x, initial_carry=_carries(n), return_carry=False),
    ),
    Case("Bidirectional of one RNN both ways", _shared_bidirectional, x3),
    Case(
        "MultiHeadAttention dropout from a stream given at the call",
        lambda n, r: n.MultiHeadAttention(2, 8, dropout_rate=0.5, decode=False, keep_rngs=False, rngs=r),
        x8,
        call=lambda n, m, x: m(x, deterministic=False, rngs=n.Rngs(dropout=4).dropout),
    ),
    Case(
        "MultiHeadAttention handing input positions to its attention function",
        _positional_attention,
        x8,
        call=lambda n, m, x: m(x, input_positions=jnp.arange(5) + 3),
    ),
    Case("MultiHeadAttention cache made by view", _mha_cache_by_view(2, 6), x8[:, :1], calls=3),
    Case("MultiHeadAttention cache made by view for batch axes", _mha_cache_by_view((1, 2), 4), x8[None, :, :1]),
    Case("MultiHeadAttention cache by view without a batch size", _mha_cache_by_view(None, 6)),
    Case("MultiHeadAttention cache by view without a max length", _mha_cache_by_view(2, None)),
    Case("RoPE of an unbatched sequence", lambda n, r: n.RoPE(), jax.random.normal(key(0), (5, 8))),
    Case(
        "RoPE at given positions",
        lambda n, r: n.RoPE(),
        x8,
        call=lambda n, m, x: m(x, input_positions=jnp.arange(5.0) + 2),
    ),
    Case(
        "RoPE at positions of another length",
        lambda n, r: n.RoPE(),
        x8,
        call=lambda n, m, x: m(x, input_positions=jnp.arange(4)),
    ),
]


@pytest.mark.apis(
    "Conv",
    "ConvTranspose",
    "LinearGeneral",
    "with_metadata",
    "WeightNorm",
    "SpectralNorm",
    "InstanceNorm",
    "BatchNorm",
    "Dropout",
    "view",
    "RNN",
    "Bidirectional",
    "MultiHeadAttention",
    "RoPE",
)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_layer_option_agrees_with_flax(nnx: Any, flax_nnx: Any, case: Case) -> None:
    assert_agrees(flax_nnx, nnx, case)


@pytest.mark.apis("BatchNorm")
def test_batch_norm_refuses_to_update_its_statistics_in_a_jit_closing_over_it(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        layer = nnx.BatchNorm(3, use_running_average=False, rngs=nnx.Rngs(0))
        return jax.jit(lambda x: layer(x))(jnp.arange(6.0).reshape(2, 3))

    assert_same(flax_nnx, nnx, scenario, mentions=("Cannot mutate",))


@pytest.mark.apis("WeightNorm")
def test_weight_norm_keeps_no_feature_axes_as_an_empty_tuple_as_flax_does(nnx: Any, flax_nnx: Any) -> None:
    """``feature_axes=None`` is kept as ``()``; set to None afterwards, it normalizes over every axis as ``()``."""

    def scenario(nnx: Any) -> Any:
        layer = nnx.WeightNorm(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), feature_axes=None, rngs=nnx.Rngs(0))
        kept = layer.feature_axes
        layer.feature_axes = None
        return kept, layer(x3), nnx.state(layer)

    assert_same(flax_nnx, nnx, scenario)
