"""Recurrent cells (LSTM, optimized LSTM, GRU, simple RNN) and the ``RNN``/``Bidirectional`` scanners."""

from __future__ import annotations

import functools
import typing as tp
import warnings

import jax
import jax.numpy as jnp

from ..module import Module
from ..pytreelib import data
from . import dtypes, initializers
from ._scanners import RNN, Bidirectional, flip_sequences
from .aliases import NO_METADATA, Array, Dtype, Metadata
from .initializers import Initializer
from .linear import Linear, default_kernel_init
from .stochastic import draw_key, fork_stream

__all__ = [
    "RNN",
    "Bidirectional",
    "GRUCell",
    "LSTMCell",
    "OptimizedLSTMCell",
    "RNNCellBase",
    "SimpleCell",
    "flip_sequences",
]

Carry = tp.Any


def modified_orthogonal(key: Array, shape: tuple[int, ...], dtype: Dtype = jnp.float32) -> Array:
    """An orthogonal matrix drawn in float32 and then cast (usable for half-precision dtypes)."""
    return initializers.orthogonal()(key, shape).astype(dtype)


class RNNCellBase(Module):
    """Interface of a recurrent cell: ``cell(carry, x) -> (carry, y)`` and ``initialize_carry``."""

    def initialize_carry(self, input_shape: tuple[int, ...], rngs=None, carry_init=None) -> Carry:
        """Returns the initial carry for inputs of ``input_shape`` (batch..., features)."""
        raise NotImplementedError

    @property
    def num_feature_axes(self) -> int:
        """Number of trailing feature axes of the cell's inputs."""
        raise NotImplementedError


class _GatedCell(RNNCellBase):
    """What the built-in cells share: their settings, carry creation and feature axes."""

    def _settings(
        self,
        in_features,
        hidden_features,
        dtype,
        param_dtype,
        promote_dtype,
        carry_init,
        keep_rngs,
        rngs,
        functions: dict[str, tp.Any],
        functions_first: bool = True,
    ) -> None:
        """Stores the settings every cell has, warning about the deprecated ones as flax does,
        with the cell's own ``functions`` (gate_fn, activation_fn, residual) before the dtypes
        (or, not ``functions_first``, after them) and ``carry_init`` left for :meth:`_done`, in
        flax's order (its reprs list attributes in the order they were set)."""
        # flax warns about keep_rngs first, and points both warnings at the cell's own code
        if keep_rngs:
            warnings.warn(
                "keep_rngs argument is deprecated. Please use rngs argument in __call__ instead",
                UserWarning,
                stacklevel=2,
            )
        if carry_init is not None:
            warnings.warn(
                "carry_init is provided in __init__. Please, use carry_init argument in "
                "`initialize_carry` method instead to initialize the carry. Otherwise, two "
                "instances with same configuration but different carry_init functions will "
                "have different graphdefs.",
                UserWarning,
                stacklevel=2,
            )
        self.in_features = in_features
        self.hidden_features = hidden_features
        if functions_first:
            for name, value in functions.items():
                setattr(self, name, value)
        self.dtype = dtype
        self.param_dtype = param_dtype
        if not functions_first:
            for name, value in functions.items():
                setattr(self, name, value)
        self.promote_dtype = promote_dtype
        self.rngs = fork_stream(rngs, "carry") if keep_rngs else data(None)

    def _done(self, carry_init: Initializer | None) -> None:
        """The last setting, once the layers are made."""
        self.carry_init = carry_init

    def _layers(
        self,
        width: int,
        *,
        input_bias: bool,
        kernel_init,
        recurrent_kernel_init,
        bias_init,
        kernel_metadata: Metadata,
        recurrent_kernel_metadata: Metadata,
        bias_metadata: Metadata,
        rngs,
    ) -> tuple[tp.Callable[[], Linear], tp.Callable[[], Linear]]:
        """Makers of the cell's dense layers to ``width`` features: one from the inputs (with a
        bias if ``input_bias``), one from the hidden state (with a bias otherwise). Each call
        draws the layer's parameters, so the order of calls fixes the random streams."""
        common = dict(
            bias_init=bias_init,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            promote_dtype=self.promote_dtype,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        from_inputs = functools.partial(
            Linear,
            self.in_features,
            width,
            use_bias=input_bias,
            kernel_init=kernel_init,
            kernel_metadata=kernel_metadata,
            **common,
        )
        from_hidden = functools.partial(
            Linear,
            self.hidden_features,
            width,
            use_bias=not input_bias,
            kernel_init=recurrent_kernel_init,
            kernel_metadata=recurrent_kernel_metadata,
            **common,
        )
        return from_inputs, from_hidden

    _num_carry_arrays = 1

    def initialize_carry(self, input_shape: tuple[int, ...], rngs=None, carry_init=None) -> Carry:
        """Returns the initial carry for inputs of ``input_shape`` (batch..., features).

        Each carry array draws one key from the ``carry`` stream of ``rngs`` (or of the
        rngs the cell keeps), even for constant initializers.
        """
        if rngs is None:
            rngs = self.rngs
        if rngs is None:
            raise ValueError("RNGs must be provided to initialize the cell carry.")
        carry_init = carry_init or self.carry_init or initializers.zeros_init()
        shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        arrays = tuple(
            carry_init(draw_key(rngs, "carry"), shape, self.param_dtype) for _ in range(self._num_carry_arrays)
        )
        return arrays if self._num_carry_arrays > 1 else arrays[0]

    @property
    def num_feature_axes(self) -> int:
        return 1


class LSTMCell(_GatedCell):
    """LSTM cell with one dense layer per gate: ``ii, if_, ig, io`` on inputs, ``hi, hf, hg, ho`` on h."""

    _num_carry_arrays = 2

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: tp.Callable[..., tp.Any] = jax.nn.sigmoid,
        activation_fn: tp.Callable[..., tp.Any] = jnp.tanh,
        kernel_init: Initializer = default_kernel_init,
        recurrent_kernel_init: Initializer = modified_orthogonal,
        bias_init: Initializer = initializers.zeros_init(),
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        carry_init: Initializer | None = None,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        keep_rngs: bool = False,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        recurrent_kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self._settings(
            in_features,
            hidden_features,
            dtype,
            param_dtype,
            promote_dtype,
            carry_init,
            keep_rngs,
            rngs,
            {"gate_fn": gate_fn, "activation_fn": activation_fn},
        )
        from_inputs, from_hidden = self._layers(
            hidden_features,
            input_bias=False,
            kernel_init=kernel_init,
            recurrent_kernel_init=recurrent_kernel_init,
            bias_init=bias_init,
            kernel_metadata=kernel_metadata,
            recurrent_kernel_metadata=recurrent_kernel_metadata,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        self.ii, self.if_, self.ig, self.io = (from_inputs() for _ in range(4))
        self.hi, self.hf, self.hg, self.ho = (from_hidden() for _ in range(4))
        self._done(carry_init)

    def __call__(self, carry: tuple[Array, Array], inputs: Array):
        c, h = carry
        i = self.gate_fn(self.ii(inputs) + self.hi(h))
        f = self.gate_fn(self.if_(inputs) + self.hf(h))
        g = self.activation_fn(self.ig(inputs) + self.hg(h))
        o = self.gate_fn(self.io(inputs) + self.ho(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class OptimizedLSTMCell(_GatedCell):
    """LSTM cell computing all four gates with one input and one hidden dense layer."""

    _num_carry_arrays = 2

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: tp.Callable[..., tp.Any] = jax.nn.sigmoid,
        activation_fn: tp.Callable[..., tp.Any] = jnp.tanh,
        kernel_init: Initializer = default_kernel_init,
        recurrent_kernel_init: Initializer = initializers.orthogonal(),
        bias_init: Initializer = initializers.zeros_init(),
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        carry_init: Initializer | None = None,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        keep_rngs: bool = False,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        recurrent_kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self._settings(
            in_features,
            hidden_features,
            dtype,
            param_dtype,
            promote_dtype,
            carry_init,
            keep_rngs,
            rngs,
            {"gate_fn": gate_fn, "activation_fn": activation_fn},
        )
        from_inputs, from_hidden = self._layers(
            4 * hidden_features,
            input_bias=False,
            kernel_init=kernel_init,
            recurrent_kernel_init=recurrent_kernel_init,
            bias_init=bias_init,
            kernel_metadata=kernel_metadata,
            recurrent_kernel_metadata=recurrent_kernel_metadata,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        self.dense_i, self.dense_h = from_inputs(), from_hidden()
        self._done(carry_init)

    def __call__(self, carry: tuple[Array, Array], inputs: Array):
        c, h = carry
        i, f, g, o = jnp.split(self.dense_i(inputs) + self.dense_h(h), 4, axis=-1)
        i, f, g, o = self.gate_fn(i), self.gate_fn(f), self.activation_fn(g), self.gate_fn(o)
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class GRUCell(_GatedCell):
    """GRU cell: reset, update and candidate gates from one input and one hidden dense layer."""

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: tp.Callable[..., tp.Any] = jax.nn.sigmoid,
        activation_fn: tp.Callable[..., tp.Any] = jnp.tanh,
        kernel_init: Initializer = default_kernel_init,
        recurrent_kernel_init: Initializer = initializers.orthogonal(),
        bias_init: Initializer = initializers.zeros_init(),
        dtype: Dtype | None = None,
        param_dtype: Dtype = jnp.float32,
        carry_init: Initializer | None = None,
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        keep_rngs: bool = False,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        recurrent_kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self._settings(
            in_features,
            hidden_features,
            dtype,
            param_dtype,
            promote_dtype,
            carry_init,
            keep_rngs,
            rngs,
            {"gate_fn": gate_fn, "activation_fn": activation_fn},
        )
        from_inputs, from_hidden = self._layers(
            3 * hidden_features,
            input_bias=True,
            kernel_init=kernel_init,
            recurrent_kernel_init=recurrent_kernel_init,
            bias_init=bias_init,
            kernel_metadata=kernel_metadata,
            recurrent_kernel_metadata=recurrent_kernel_metadata,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        self.dense_i, self.dense_h = from_inputs(), from_hidden()
        self._done(carry_init)

    def __call__(self, carry: Array, inputs: Array):
        h = carry
        x_r, x_z, x_n = jnp.split(self.dense_i(inputs), 3, axis=-1)
        h_r, h_z, h_n = jnp.split(self.dense_h(h), 3, axis=-1)
        r = self.gate_fn(x_r + h_r)
        z = self.gate_fn(x_z + h_z)
        n = self.activation_fn(x_n + r * h_n)
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h


class SimpleCell(_GatedCell):
    """Elman cell: ``h' = activation_fn(dense_i(x) + dense_h(h))``, with ``+ h`` inside if ``residual``."""

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        dtype: Dtype = jnp.float32,
        param_dtype: Dtype = jnp.float32,
        carry_init: Initializer | None = None,
        residual: bool = False,
        activation_fn: tp.Callable[..., tp.Any] = jnp.tanh,
        kernel_init: Initializer = default_kernel_init,
        recurrent_kernel_init: Initializer = initializers.orthogonal(),
        bias_init: Initializer = initializers.zeros_init(),
        promote_dtype: tp.Callable = dtypes.promote_dtype,
        keep_rngs: bool = False,
        rngs,
        kernel_metadata: Metadata = NO_METADATA,
        recurrent_kernel_metadata: Metadata = NO_METADATA,
        bias_metadata: Metadata = NO_METADATA,
    ):
        self._settings(
            in_features,
            hidden_features,
            dtype,
            param_dtype,
            promote_dtype,
            carry_init,
            keep_rngs,
            rngs,
            {"residual": residual, "activation_fn": activation_fn},
            functions_first=False,
        )
        from_inputs, from_hidden = self._layers(
            hidden_features,
            input_bias=True,
            kernel_init=kernel_init,
            recurrent_kernel_init=recurrent_kernel_init,
            bias_init=bias_init,
            kernel_metadata=kernel_metadata,
            recurrent_kernel_metadata=recurrent_kernel_metadata,
            bias_metadata=bias_metadata,
            rngs=rngs,
        )
        self.dense_h = from_hidden()  # made first: its parameters draw first
        self.dense_i = from_inputs()
        self._done(carry_init)

    def __call__(self, carry: Array, inputs: Array):
        pre_activation = self.dense_i(inputs) + self.dense_h(carry)
        if self.residual:  # inside the activation, as the docs' formula and flax have it
            pre_activation = pre_activation + carry
        new_carry = self.activation_fn(pre_activation)
        return new_carry, new_carry
