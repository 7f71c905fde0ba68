"""Differential tests of the nn layers over fixed cases: named configurations the drawn
tests do not reach (metadata, masks, paddings by name, decoding, RNN keywords, error
probes), each built with flax.nnx and the implementation from the same seed and compared
state for state and output for output, bit for bit, gradients included."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_agrees
from nnx_conformance.testing.layer_cases import Case
from nnx_conformance.testing.strategies import RECURRENT_CELLS

pytestmark = pytest.mark.kind("differential")


def _label(keywords: dict[str, Any]) -> str:
    """Keywords as a test id: functions by qualified name, so every worker collects the same ids."""
    shown = (
        f"{key!r}: {v.__qualname__ if callable(v) and not isinstance(v, type) else repr(v)}"
        for key, v in keywords.items()
    )
    return "{" + ", ".join(shown) + "}"


def cases() -> list[Case]:
    """Every fixed case: named layer configurations, error probes and call keywords."""
    key = jax.random.key
    x3 = jax.random.normal(key(1), (2, 5, 3))
    x8 = jax.random.normal(key(1), (2, 5, 8))
    x4d = jax.random.normal(key(1), (2, 7, 6, 4))
    x5d = jax.random.normal(key(1), (2, 5, 4, 3, 2))
    normal = jax.nn.initializers.normal()
    out: list[Case] = [
        Case("Linear", lambda n, r: n.Linear(3, 4, rngs=r), x3),
        Case(
            "Linear bf16 params, random bias",
            lambda n, r: n.Linear(3, 4, bias_init=normal, param_dtype=jnp.bfloat16, rngs=r),
            x3,
        ),
        Case("Linear no bias", lambda n, r: n.Linear(3, 4, use_bias=False, rngs=r), x3),
        Case(
            "Linear metadata", lambda n, r: n.Linear(3, 4, kernel_metadata={"a": 1}, bias_metadata={"b": 2}, rngs=r), x3
        ),
        Case("Linear wrong in_features", lambda n, r: n.Linear(5, 4, rngs=r), x3),
        Case(
            "LinearGeneral 2 axes",
            lambda n, r: n.LinearGeneral((5, 3), (4, 2), axis=(1, 2), bias_init=normal, rngs=r),
            x3,
        ),
        Case(
            "LinearGeneral batch axis",
            lambda n, r: n.LinearGeneral(3, (4, 2), batch_axis={0: 2}, bias_init=normal, rngs=r),
            x3,
        ),
        Case("LinearGeneral middle axis", lambda n, r: n.LinearGeneral(5, 4, axis=1, rngs=r), x3),
        Case("Einsum", lambda n, r: n.Einsum("nta,hab->nthb", (8, 3, 4), (8, 4), bias_init=normal, rngs=r), x3),
        Case("Einsum transposed out", lambda n, r: n.Einsum("nta,ab->tnb", (3, 4), (4,), bias_init=normal, rngs=r), x3),
        Case("Einsum no arrow", lambda n, r: n.Einsum("nta,ab", (3, 4), rngs=r), x3),
        Case("Embed", lambda n, r: n.Embed(5, 3, rngs=r), jnp.array([[0, 1, 4], [-1, 2, 3]])),
        Case("Embed single row", lambda n, r: n.Embed(1, 3, rngs=r), jnp.array([[0, 0]])),
        Case("Embed float ids", lambda n, r: n.Embed(5, 3, rngs=r), jnp.ones((2,))),
        Case(
            "Embed int table",
            lambda n, r: n.Embed(5, 3, param_dtype=jnp.int32, embedding_init=n.initializers.ones, rngs=r),
            jnp.array([[0, 1, 4]]),
        ),
        Case("PReLU", lambda n, r: n.PReLU(0.1), x3),
        Case("PReLU int inputs", lambda n, r: n.PReLU(0.1), jnp.array([-2, 3])),
        Case("Linear bf16 computation", lambda n, r: n.Linear(3, 4, dtype=jnp.bfloat16, rngs=r), x3),
        Case("Embed bf16", lambda n, r: n.Embed(5, 3, dtype=jnp.bfloat16, rngs=r), jnp.array([[0, 1, 4]])),
        Case(
            "MultiHeadAttention bf16",
            lambda n, r: n.MultiHeadAttention(2, 8, dtype=jnp.bfloat16, decode=False, rngs=r),
            jax.random.normal(key(1), (2, 5, 8)),
        ),
        Case("LoRA bf16", lambda n, r: n.LoRA(3, 2, 4, dtype=jnp.bfloat16, param_dtype=jnp.bfloat16, rngs=r), x3),
        Case(
            "LSTMCell bf16 in RNN",
            lambda n, r: n.RNN(n.LSTMCell(3, 4, dtype=jnp.bfloat16, param_dtype=jnp.bfloat16, rngs=r)),
            x3,
        ),
        Case("ConvTranspose bf16", lambda n, r: n.ConvTranspose(3, 4, 3, dtype=jnp.bfloat16, rngs=r), x3),
        Case("Conv bf16 computation", lambda n, r: n.Conv(3, 4, 3, dtype=jnp.bfloat16, rngs=r), x3),
    ]
    for kw in [
        {},
        {"padding": "VALID"},
        {"padding": "CIRCULAR", "strides": 2},
        {"padding": "REFLECT"},
        {"padding": "CIRCULAR", "kernel_dilation": 3},
        {"padding": "REFLECT", "kernel_dilation": 3},
        {"padding": "CAUSAL", "kernel_dilation": 2},
        {"padding": [(1, 2)], "input_dilation": 2},
        {"use_bias": False},
        {"padding": 2},
        {"padding": "FOO"},
        {"mask": jnp.tril(jnp.ones((3, 3, 4)))},
    ]:
        label = {k: "<array>" if hasattr(v, "shape") else v for k, v in kw.items()}
        out.append(Case(f"Conv1d {label}", lambda n, r, kw=kw: n.Conv(3, 4, 3, rngs=r, **kw), x3))
    built = "".join(["CIRC", "ULAR"])  # a padding name made at run time: equal to the literal, not the same object
    out.append(
        Case(
            "ConvTranspose1d circular padding named at run time",
            lambda n, r: n.ConvTranspose(3, 4, 3, padding=built, rngs=r),
            x3,
        )
    )
    out += [
        Case(
            "Conv2d groups circular",
            lambda n, r: n.Conv(4, 6, (3, 2), feature_group_count=2, padding="CIRCULAR", rngs=r),
            x4d,
        ),
        Case("Conv2d unbatched", lambda n, r: n.Conv(4, 6, (3, 2), rngs=r), x4d[0]),
        Case("Conv1d two batch axes", lambda n, r: n.Conv(4, 6, (3,), rngs=r), x4d),
        Case("Conv2d causal", lambda n, r: n.Conv(4, 6, (3, 2), padding="CAUSAL", rngs=r), x4d),
        Case("Conv3d", lambda n, r: n.Conv(2, 3, (3, 2, 2), strides=(1, 2, 1), rngs=r), x5d),
        Case("ConvTranspose3d", lambda n, r: n.ConvTranspose(2, 3, (2, 3, 2), strides=(2, 1, 1), rngs=r), x5d),
    ]
    # circular padding folds an output longer than its period by an even and an odd overhang
    # (kernel over stride: 3 over 1, 3 over 2), with the kernel transposed and not
    for kw in [
        {},
        {"padding": "VALID"},
        {"padding": "CIRCULAR", "strides": 2},
        {"padding": "CIRCULAR", "strides": 3},
        {"padding": "CIRCULAR", "strides": 3, "transpose_kernel": True},
        {"padding": "CIRCULAR"},
        {"padding": "CIRCULAR", "transpose_kernel": True},
        {"padding": "CIRCULAR", "strides": 2, "transpose_kernel": True},
        {"strides": 2, "use_bias": False, "transpose_kernel": True},
    ]:
        out.append(Case(f"ConvTranspose1d {kw}", lambda n, r, kw=kw: n.ConvTranspose(3, 4, 3, rngs=r, **kw), x3))
        out.append(Case(f"ConvTranspose2d {kw}", lambda n, r, kw=kw: n.ConvTranspose(4, 2, (3, 2), rngs=r, **kw), x4d))
    for name, kw in [
        ("BatchNorm", {"momentum": 0.9}),
        ("BatchNorm", {"use_running_average": True}),
        ("BatchNorm", {"use_bias": False, "scale_init": normal}),
        ("BatchNorm", {"axis": 1, "use_fast_variance": False, "nf": 7}),
        ("BatchNorm", {"dtype": jnp.bfloat16, "param_dtype": jnp.bfloat16}),
        ("LayerNorm", {}),
        ("LayerNorm", {"reduction_axes": (1, 2, 3), "use_scale": False}),
        ("LayerNorm", {"param_dtype": jnp.bfloat16, "bias_init": normal}),
        ("LayerNorm", {"dtype": jnp.bfloat16, "use_fast_variance": False}),
        ("RMSNorm", {}),
        ("RMSNorm", {"use_scale": False}),
        ("GroupNorm", {"num_groups": 2}),
        ("GroupNorm", {"num_groups": None, "group_size": 2}),
        ("InstanceNorm", {}),
        ("InstanceNorm", {"feature_axes": (1, -1), "nf": 28}),
    ]:
        kw = dict(kw)
        nf = kw.pop("nf", 4)
        out.append(
            Case(
                f"{name} {_label(kw)}",
                lambda n, r, name=name, nf=nf, kw=kw: getattr(n, name)(nf, rngs=r, **kw),
                x4d,
                calls=2,
            )
        )
    out += [
        Case("SpectralNorm(Linear)", lambda n, r: n.SpectralNorm(n.Linear(3, 4, rngs=r), rngs=r), x3, calls=2),
        Case(
            "SpectralNorm(Conv) 3 steps",
            lambda n, r: n.SpectralNorm(n.Conv(3, 4, (3,), rngs=r), n_steps=3, rngs=r),
            x3,
            calls=2,
        ),
        Case("WeightNorm(Linear)", lambda n, r: n.WeightNorm(n.Linear(3, 4, rngs=r), rngs=r), x3, calls=2),
        Case(
            "WeightNorm(Conv) no feature axes",
            lambda n, r: n.WeightNorm(n.Conv(3, 4, (3,), rngs=r), feature_axes=None, rngs=r),
            x3,
        ),
        Case("Dropout", lambda n, r: n.Dropout(0.3, rngs=r), x8, calls=2),
        Case("Dropout broadcast", lambda n, r: n.Dropout(0.3, broadcast_dims=(0,), rngs=r), x8, calls=2),
        Case("Dropout default stream", lambda n, r: n.Dropout(0.3, rngs=n.Rngs(3)), x8, calls=2),
        Case("Dropout key at call", lambda n, r: n.Dropout(0.3), x8, call=lambda n, m, x: m(x, rngs=jax.random.key(5))),
        Case("Dropout without rngs", lambda n, r: n.Dropout(0.3), x8),
        Case("Dropout deterministic", lambda n, r: n.Dropout(0.3, deterministic=True), x8),
    ]
    for kw in [
        {"decode": False},
        {"decode": False, "qkv_features": 16, "out_features": 6},
        {"decode": False, "num_kv_heads": 1, "normalize_qk": True},
        {"decode": False, "dropout_rate": 0.2, "deterministic": False},
        {"decode": False, "dropout_rate": 0.2, "deterministic": False, "broadcast_dropout": False},
        {"decode": False, "kernel_init": normal, "out_bias_init": normal},
        {
            "decode": False,
            "normalize_qk": True,
            "kernel_metadata": {"k": 1},
            "out_bias_metadata": {"o": 2},
            "query_ln_scale_metadata": {"q": 3},
        },
        {},
    ]:
        out.append(
            Case(
                f"MultiHeadAttention {_label(kw)}",
                lambda n, r, kw=kw: n.MultiHeadAttention(2, 8, rngs=r, **kw),
                x8,
                calls=2,
            )
        )
    out += [
        Case(
            "MultiHeadAttention causal",
            lambda n, r: n.MultiHeadAttention(2, 8, decode=False, rngs=r),
            x8,
            call=lambda n, m, x: m(x, is_causal=True),
        ),
        Case(
            "MultiHeadAttention mask",
            lambda n, r: n.MultiHeadAttention(2, 8, decode=False, rngs=r),
            x8,
            call=lambda n, m, x: m(x, mask=n.make_causal_mask(jnp.ones((2, 5)))),
        ),
        Case(
            "MultiHeadAttention sow weights",
            lambda n, r: n.MultiHeadAttention(2, 8, decode=False, rngs=r),
            x8,
            call=lambda n, m, x: m(x, sow_weights=True),
        ),
        Case("MultiHeadAttention decode step", _mha_decoding, x8[:, :1], calls=3),
        Case(
            "MultiHeadAttention decode without cache",
            lambda n, r: n.MultiHeadAttention(2, 8, decode=True, rngs=r),
            x8[:, :1],
        ),
        Case("RoPE", lambda n, r: n.RoPE(), jax.random.normal(key(0), (2, 3, 5, 8))),
        Case(
            "RoPE cached",
            lambda n, r: n.RoPE(embedding_size=8, max_seq_len=10),
            jax.random.normal(key(0), (2, 3, 5, 8)),
        ),
        Case("LoRA", lambda n, r: n.LoRA(3, 2, 4, rngs=r), x3),
        Case(
            "LoRA around Linear",
            lambda n, r: n.LoRA(3, 2, 4, base_module=n.Linear(3, 4, rngs=r), b_initializer=normal, rngs=r),
            x3,
        ),
        Case("LoRALinear", lambda n, r: n.LoRALinear(3, 4, lora_rank=2, b_initializer=normal, rngs=r), x3),
    ]
    for cell in RECURRENT_CELLS:
        out.append(
            Case(
                f"{cell} step",
                lambda n, r, c=cell: getattr(n, c)(3, 4, bias_init=normal, rngs=r),
                x3[:, 0],
                call=_cell_step,
            )
        )
        for kw in [
            {},
            {"return_carry": True},
            {"reverse": True, "keep_order": True},
            {"time_major": True},
            {"seq_lengths": jnp.array([3, 5]), "return_carry": True},
            {"seq_lengths": jnp.array([3, 5]), "reverse": True, "return_carry": True},
        ]:
            out.append(
                Case(
                    f"RNN({cell}) {kw}",
                    lambda n, r, c=cell: n.RNN(getattr(n, c)(3, 4, rngs=r)),
                    x3,
                    call=lambda n, m, x, kw=kw: m(x, **kw),
                    calls=2,
                )
            )
        out.append(
            Case(
                f"RNN({cell}) time-major, reversed to seq_lengths",
                lambda n, r, c=cell: n.RNN(getattr(n, c)(3, 4, rngs=r)),
                x3.swapaxes(0, 1),
                call=lambda n, m, x: m(x, time_major=True, reverse=True, seq_lengths=jnp.array([3, 5])),
            )
        )
    out += [
        Case(
            "RNN keeping Rngs, random carry",
            lambda n, r: n.RNN(n.SimpleCell(3, 4, carry_init=normal, rngs=r), rngs=r),
            x3,
            calls=2,
        ),
        Case("RNN cell keeping rngs", lambda n, r: n.RNN(n.SimpleCell(3, 4, keep_rngs=True, rngs=r)), x3),
        Case(
            "Bidirectional",
            lambda n, r: n.Bidirectional(n.RNN(n.GRUCell(3, 4, rngs=r)), n.RNN(n.LSTMCell(3, 4, rngs=r))),
            x3,
            calls=2,
        ),
        Case(
            "Bidirectional with Rngs",
            lambda n, r: n.Bidirectional(
                n.RNN(n.GRUCell(3, 4, rngs=r)), n.RNN(n.GRUCell(3, 4, rngs=r)), rngs=r, return_carry=True
            ),
            x3,
        ),
    ]
    return out


def _mha_decoding(n: Any, rngs: Any) -> Any:
    layer = n.MultiHeadAttention(2, 8, decode=True, rngs=rngs)
    layer.init_cache((2, 5, 8))
    return layer


def _cell_step(n: Any, cell: Any, x: Any) -> Any:
    """One step of ``cell`` from a random initial carry."""
    carry = cell.initialize_carry(x.shape, rngs=n.Rngs(carry=3), carry_init=jax.nn.initializers.normal())
    return cell(carry, x)


CASES = cases()


@pytest.mark.apis(
    "Linear",
    "LinearGeneral",
    "Einsum",
    "Embed",
    "PReLU",
    "Conv",
    "ConvTranspose",
    "BatchNorm",
    "LayerNorm",
    "RMSNorm",
    "GroupNorm",
    "InstanceNorm",
    "SpectralNorm",
    "WeightNorm",
    "Dropout",
    "MultiHeadAttention",
    "RoPE",
    "LoRA",
    "LoRALinear",
    "RNN",
    "Bidirectional",
    *RECURRENT_CELLS,
)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_fixed_layer_case_agrees_with_flax(nnx: Any, flax_nnx: Any, case: Case) -> None:
    assert_agrees(flax_nnx, nnx, case)
