"""Transform keywords that flax.nnx 0.12.12 accepts in its signatures but refuses: the
differentiation transforms' deprecated ``reduce_axes``, jit's ``backend`` and ``device``
(nnx.jit always hands jax.jit output shardings, which JAX does not allow beside them), and
keyword arguments to a jit given ``in_shardings``. Each raises flax's exception type with
a message that names the keyword."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding, PartitionSpec

pytestmark = pytest.mark.kind("error")


def _sum(x: Any) -> Any:
    return jnp.sum(x * x)


@pytest.mark.apis("grad", "value_and_grad", "vjp")
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp"])
def test_a_differentiation_transform_refuses_reduce_axes(nnx: Any, transform: str) -> None:
    x = jnp.arange(3.0)
    with pytest.raises(NotImplementedError, match=f"reduce_axes argument to {transform} is deprecated"):
        if transform == "vjp":
            nnx.vjp(_sum, x, reduce_axes=("batch",), graph_updates=False)
        else:
            getattr(nnx, transform)(_sum, reduce_axes=("batch",))(x)


def _jit(nnx: Any, transform: str, **options: Any) -> Any:
    """``nnx.jit`` or ``nnx.jit_partial`` of ``(x, *, scale) -> x * scale``, given ``options``."""

    def scaled(x: Any, *, scale: float = 2.0) -> Any:
        return x * scale

    if transform == "jit":
        return nnx.jit(scaled, **options)
    return nnx.jit_partial(scaled, graph_updates=False, **options)


@pytest.mark.apis("jit", "jit_partial")
@pytest.mark.parametrize("transform", ["jit", "jit_partial"])
@pytest.mark.parametrize("option", ["backend", "device"])
def test_jit_refuses_a_backend_or_a_device(nnx: Any, transform: str, option: str) -> None:
    value = {"backend": "cpu", "device": jax.devices()[0]}[option]
    with pytest.raises(ValueError, match="If backend or device is specified on jit"):
        _jit(nnx, transform, **{option: value})(jnp.arange(3.0))


@pytest.mark.apis("jit", "jit_partial")
@pytest.mark.parametrize("transform", ["jit", "jit_partial"])
def test_jit_with_in_shardings_refuses_keyword_arguments(nnx: Any, transform: str) -> None:
    replicated = NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())
    compiled = _jit(nnx, transform, in_shardings=replicated)
    with pytest.raises(ValueError, match="does not support kwargs when in_shardings is specified"):
        compiled(jnp.arange(3.0), scale=3.0)
