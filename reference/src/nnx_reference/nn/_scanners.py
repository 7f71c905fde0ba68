"""The ``RNN`` and ``Bidirectional`` scanners: a recurrent cell run over the time axis of its inputs."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp

from .. import filterlib, graphlib, rnglib
from ..module import Module
from ..transforms import Carry as ScanCarry
from ..transforms import StateAxes, scan
from .aliases import Array
from .stochastic import fork_stream

Carry = tp.Any


def flip_sequences(inputs: Array, seq_lengths: Array | None, num_batch_dims: int, time_major: bool) -> Array:
    """Reverses each sequence along the time axis, keeping padding (past ``seq_lengths``) at the end."""
    time_axis = 0 if time_major else num_batch_dims
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    steps = inputs.shape[time_axis]
    lengths = jnp.asarray(seq_lengths)
    lengths = jnp.expand_dims(lengths, 0 if time_major else num_batch_dims)
    reversed_steps = jnp.arange(steps - 1, -1, -1)
    step_shape = [1] * (num_batch_dims + 1)
    step_shape[time_axis] = steps
    index = (jnp.reshape(reversed_steps, step_shape) + lengths) % steps
    index = jnp.reshape(index, index.shape + (1,) * (inputs.ndim - index.ndim))
    return jnp.take_along_axis(inputs, index, axis=time_axis)


def _carry_stream(rngs: bool | rnglib.Rngs) -> rnglib.RngStream | None:
    """The stream an ``RNN``/``Bidirectional`` keeps for initializing carries.

    ``True`` gives a fresh ``carry`` stream seeded with 0, ``False`` none, and an
    ``Rngs`` a fork of its ``carry`` stream.
    """
    if rngs is True:
        return rnglib.RngStream(0, tag="carry")
    if rngs is False:
        return None
    return fork_stream(rngs, "carry")


def _carries_all_state(state_axes: tp.Any) -> bool:
    """Whether ``state_axes`` is the default of ``RNN``: every Variable of the cell carried."""
    return list(state_axes.items()) == [(..., ScanCarry)]


class RNN(Module):
    """Runs a cell over the time axis of its inputs (a scan), returning all outputs."""

    def __init__(
        self,
        cell: Module,
        *,
        time_major: bool = False,
        return_carry: bool = False,
        reverse: bool = False,
        keep_order: bool = False,
        unroll: int = 1,
        state_axes: tp.Mapping[str, tp.Any] | None = None,
        broadcast_rngs: tp.Any = None,
        rngs=True,
    ):
        self.cell = cell
        self.time_major = time_major
        self.return_carry = return_carry
        self.reverse = reverse
        self.keep_order = keep_order
        self.unroll = unroll
        if not isinstance(rngs, (bool, rnglib.Rngs)):
            raise ValueError(f"Expected rngs to be a jax.Array, int, Rngs, or bool. Got {type(rngs)}.")
        self.rngs = _carry_stream(rngs)
        self.state_axes = state_axes or StateAxes({...: ScanCarry})
        self.broadcast_rngs = broadcast_rngs

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Carry | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
        rngs=None,
    ):
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, rnglib.Rngs):
            rngs = fork_stream(rngs, "carry")  # the carry draws from a fork, not from the stream

        time_axis = 0 if time_major else inputs.ndim - (self.cell.num_feature_axes + 1)
        num_batch_dims = inputs.ndim - self.cell.num_feature_axes - 1
        if reverse:
            inputs = flip_sequences(inputs, seq_lengths, num_batch_dims, time_major)
        if initial_carry is None:
            step_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
            initial_carry = self.cell.initialize_carry(step_shape, rngs)

        xs = jnp.moveaxis(inputs, time_axis, 0)
        if self.broadcast_rngs is None and _carries_all_state(self.state_axes):
            carry, (carries, ys) = self._scan_carrying_the_cell(initial_carry, xs)
        else:
            carry, (carries, ys) = self._scan_with_state_axes(initial_carry, xs)
        if seq_lengths is not None:
            # The carry after each sequence's last valid step, not after the padding.
            last = jnp.asarray(seq_lengths) - 1
            carry = jax.tree.map(lambda c: c[last, jnp.arange(c.shape[1])] if c.ndim > 1 else c[last], carries)
        outputs = jnp.moveaxis(ys, 0, time_axis)
        if reverse and keep_order:
            outputs = flip_sequences(outputs, seq_lengths, num_batch_dims, time_major)
        return (carry, outputs) if return_carry else outputs

    def _scan_carrying_the_cell(self, carry: Carry, xs: Array) -> tuple[Carry, tuple[Carry, Array]]:
        """Scans the cell over the leading axis of ``xs`` with all of its state in the carry,
        returning the last carry and each step's carry and output."""
        graphdef, cell_state = graphlib.split(self.cell)

        def step(loop, x):
            state, carry = loop
            cell = graphlib.merge(graphdef, state)
            carry, y = cell(carry, x)
            _, state = graphlib.split(cell)
            return (state, carry), (carry, y)

        (cell_state, carry), stacked = jax.lax.scan(step, (cell_state, carry), xs, unroll=self.unroll)
        graphlib.update(self.cell, cell_state)
        return carry, stacked

    def _scan_with_state_axes(self, carry: Carry, xs: Array) -> tuple[Carry, tuple[Carry, Array]]:
        """Scans the cell as ``_scan_carrying_the_cell`` does, with its state split by
        ``state_axes`` and the ``broadcast_rngs`` streams broadcast: each call draws one new
        key from each of them, the same key for every step."""
        broadcast = filterlib.All(rnglib.RngState, self.broadcast_rngs)
        state_axes = StateAxes({broadcast: None, **dict(self.state_axes.items())})

        @rnglib.split_rngs(splits=1, only=self.broadcast_rngs, squeeze=True, graph=True, graph_updates=True)
        @scan(
            in_axes=(state_axes, ScanCarry, 0),
            out_axes=(ScanCarry, 0),
            unroll=self.unroll,
            graph=True,
            graph_updates=True,
        )
        def step(cell: Module, carry: Carry, x: Array):
            carry, y = cell(carry, x)
            return carry, (carry, y)

        return step(self.cell, carry, xs)


def _concatenate(a: Array, b: Array) -> Array:
    return jnp.concatenate([a, b], axis=-1)


class Bidirectional(Module):
    """Runs one RNN forward and one backward over the inputs and merges their outputs."""

    # Class-level defaults; the constructor sets them per instance.
    merge_fn = staticmethod(_concatenate)
    time_major = False
    return_carry = False

    def __init__(
        self,
        forward_rnn: RNN,
        backward_rnn: RNN,
        *,
        merge_fn: tp.Callable[[Array, Array], Array] = _concatenate,
        time_major: bool = False,
        return_carry: bool = False,
        rngs=True,
    ):
        self.forward_rnn = forward_rnn
        self.backward_rnn = backward_rnn
        self.merge_fn = merge_fn
        self.time_major = time_major
        self.return_carry = return_carry
        if isinstance(rngs, rnglib.RngStream):
            self.rngs = rngs
        elif isinstance(rngs, (bool, rnglib.Rngs)):
            self.rngs = _carry_stream(rngs)
        else:
            raise TypeError(f"rngs must be a Rngs, jax.Array, int, or bool, but got {type(rngs)}.")

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: tuple[Carry, Carry] | None = None,
        rngs=None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ):
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        rngs = self.rngs if rngs is None else rngs
        carry_forward, carry_backward = initial_carry if initial_carry is not None else (None, None)
        carry_forward, outputs_forward = self.forward_rnn(
            inputs,
            initial_carry=carry_forward,
            rngs=rngs,
            seq_lengths=seq_lengths,
            return_carry=True,
            time_major=time_major,
            reverse=False,
        )
        carry_backward, outputs_backward = self.backward_rnn(
            inputs,
            initial_carry=carry_backward,
            rngs=rngs,
            seq_lengths=seq_lengths,
            return_carry=True,
            time_major=time_major,
            reverse=True,
            keep_order=True,
        )
        outputs = jax.tree.map(self.merge_fn, outputs_forward, outputs_backward)
        carry = (carry_forward, carry_backward)
        return (carry, outputs) if return_carry else outputs
