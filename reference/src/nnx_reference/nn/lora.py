"""Low-rank adaptation: a trainable ``x @ A @ B`` update, alone or added to a wrapped layer."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp

from ..module import Module
from ..variablelib import Param, Variable
from . import dtypes, initializers
from .aliases import NO_METADATA, Dtype, Metadata
from .initializers import Initializer
from .linear import Linear

__all__ = ["LoRA", "LoRALinear", "LoRAParam"]


default_a_initializer = initializers.he_uniform()
default_b_initializer = initializers.zeros


class LoRAParam(Param):
    """The ``Param`` type of LoRA's low-rank factors, so they can be filtered on their own."""


class LoRA(Module):
    """``y = x @ lora_a @ lora_b`` (plus ``base_module(x)`` when a module is wrapped)."""

    def __init__(
        self,
        in_features: int,
        lora_rank: int,
        out_features: int,
        *,
        base_module: Module | None = None,
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        a_initializer: Initializer = default_a_initializer,
        b_initializer: Initializer = default_b_initializer,
        lora_param_type: type[Variable] = LoRAParam,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        a_metadata: Metadata = NO_METADATA,
        b_metadata: Metadata = NO_METADATA,
    ):
        self.in_features = in_features
        self.out_features = out_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.lora_param_type = lora_param_type
        self.base_module = base_module
        self.promote_dtype = promote_dtype
        self.lora_a = lora_param_type(a_initializer(rngs.params(), (in_features, lora_rank), param_dtype), **a_metadata)
        self.lora_b = lora_param_type(
            b_initializer(rngs.params(), (lora_rank, out_features), param_dtype), **b_metadata
        )

    def __call__(self, x: jax.Array, **kwargs: tp.Any):
        """Applies the low-rank update; ``kwargs`` are passed on to the wrapped module,
        which, like the update, sees the input promoted to ``dtype``."""
        inputs, lora_a, lora_b = self.promote_dtype((x, self.lora_a[...], self.lora_b[...]), dtype=self.dtype)
        out = inputs @ lora_a @ lora_b
        if self.base_module is not None:
            if not callable(self.base_module):
                raise ValueError("`self.base_module` must be callable.")
            out = out + self.base_module(inputs, **kwargs)
        return out


class LoRALinear(Linear):
    """A ``Linear`` layer with a ``LoRA`` update (``self.lora``) added to its output."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        lora_rank: int,
        lora_dtype: Dtype | None = None,
        lora_param_dtype: Dtype = jnp.float32,
        a_initializer: Initializer = default_a_initializer,
        b_initializer: Initializer = default_b_initializer,
        lora_param_type: type[Variable] = LoRAParam,
        lora_promote_dtype: tp.Callable = dtypes.promote_dtype,
        rngs,
        a_metadata: Metadata = NO_METADATA,
        b_metadata: Metadata = NO_METADATA,
        **kwargs,
    ):
        super().__init__(in_features, out_features, rngs=rngs, **kwargs)
        self.lora = LoRA(
            in_features,
            lora_rank,
            out_features,
            dtype=lora_dtype,
            param_dtype=lora_param_dtype,
            a_initializer=a_initializer,
            b_initializer=b_initializer,
            lora_param_type=lora_param_type,
            promote_dtype=lora_promote_dtype,
            rngs=rngs,
            a_metadata=a_metadata,
            b_metadata=b_metadata,
        )

    def __call__(self, x: jax.Array, out_sharding=None):
        return super().__call__(x, out_sharding=out_sharding) + self.lora(x)
