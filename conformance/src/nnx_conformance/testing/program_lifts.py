"""Steps of random NNX programs through the transforms that map over devices or take a
custom rule, for the state machine of :mod:`program_machine`: ``nnx.pmap`` and
``nnx.shard_map`` of a Net over one to three of the suite's (virtual) devices,
``nnx.custom_vjp`` around a Net's call, and ensembles made and called under ``nnx.vmap``
with their rng streams split by ``nnx.split_rngs``. Each step is plain data and runs
with either implementation on a :class:`program_steps.MachineWorld`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from . import graph_strategies as gs
from . import programs
from .program_steps import MachineWorld

AXIS = "devices"
"""The name of the mapped axis of pmap and of the mesh of shard_map."""

ROWS = np.concatenate([programs.X, -programs.X])
"""The input of a shard_map step: six rows, split evenly over one, two or three devices."""


@dataclass(frozen=True)
class PmapCall:
    """Calls Net ``target`` under ``nnx.pmap`` over the first ``devices`` devices, the Net
    broadcast (``in_axes=None``) and one copy of :data:`programs.X` per device (scaled by
    its index); with ``mean``, each device returns the mean of all devices' outputs
    (``lax.pmean`` over the axis name)."""

    target: int
    mode: gs.Mode
    devices: int
    mean: bool

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        devices = jax.devices()[: self.devices]
        xs = jnp.stack([programs.X * (index + 1) for index in range(len(devices))])

        def forward(m: Any, x: Any) -> Any:
            y = m(x)
            return jax.lax.pmean(y, AXIS) if self.mean else y

        with self.mode.context(nnx):
            mapped = nnx.pmap(forward, in_axes=(None, 0), axis_name=AXIS, devices=devices, **self.mode.kwargs())
            return mapped(model, xs)


@dataclass(frozen=True)
class ShardMapCall:
    """Calls Net ``target`` under ``nnx.shard_map`` on a mesh of the first ``devices``
    devices, the Net replicated (``PartitionSpec()``), the rows of :data:`ROWS` split over
    the devices (``shard_rows``) or replicated, the output likewise."""

    target: int
    mode: gs.Mode
    devices: int
    shard_rows: bool

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        mesh = Mesh(np.array(jax.devices()[: self.devices]), (AXIS,))
        rows = PartitionSpec(AXIS) if self.shard_rows else PartitionSpec()
        with self.mode.context(nnx):
            mapped = nnx.shard_map(
                lambda m, x: m(x), mesh=mesh, in_specs=(PartitionSpec(), rows), out_specs=rows, **self.mode.kwargs()
            )
            return mapped(model, jnp.asarray(ROWS))


def _custom_loss(nnx: Any, updates: bool, kwargs: dict[str, bool]) -> Any:
    """``sum(m(x) ** 2)`` under ``nnx.custom_vjp``, whose rule passes the Net's incoming
    update gradients back as its tangent (with graph updates; a zero Net without) and
    gives ``x`` the tangent ``g * sign(x)``."""

    @functools.partial(nnx.custom_vjp, **kwargs)
    def loss(m: Any, x: Any) -> Any:
        return jnp.sum(m(x) ** 2)

    def forward(m: Any, x: Any) -> Any:
        return loss(m, x), (m, x)

    def backward(residuals: Any, g: Any) -> Any:
        m, x = residuals
        if updates:
            (m_updates, _), g = g
            return jax.tree.map(lambda t: t, m_updates), g * jnp.sign(x)
        return jax.tree.map(jnp.zeros_like, m), g * jnp.sign(x)

    loss.defvjp(forward, backward)
    return loss


@dataclass(frozen=True)
class CustomVjpCall:
    """Net ``target``'s loss under ``nnx.custom_vjp`` (:func:`_custom_loss`) in ``mode``:
    its value, and its gradient by the input through the custom rule."""

    target: int
    mode: gs.Mode

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        x = jnp.asarray(programs.X)
        with self.mode.context(nnx):
            loss = _custom_loss(nnx, self.mode.graph and self.mode.updates, self.mode.kwargs())
            return loss(model, x), nnx.grad(loss, argnums=1, **self.mode.kwargs())(model, x)


@functools.cache
def _member_class(module_base: type) -> type:
    """The member of the programs' ensembles, on one implementation's Module base."""

    def init(self: Any, nnx: Any, rngs: Any) -> None:
        self.lin = nnx.Linear(2, 2, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def call(self: Any, x: Any) -> Any:
        return self.drop(self.lin(x))

    return type("Member", (module_base,), {"__init__": init, "__call__": call, "__module__": __name__})


def _axes(nnx: Any, node: Any, axes: dict[Any, Any], mode: gs.Mode) -> Any:
    """The vmap axes of ``node`` by filter: a ``StateAxes`` in graph mode with graph updates,
    else a prefix tree (vmap takes StateAxes in that mode only)."""
    return nnx.StateAxes(axes) if mode.graph and mode.updates else nnx.prefix(node, axes, graph=mode.graph)


ONLY = ("all", "params")
"""Which rng streams an ensemble's creation splits: all of them, or only ``params`` (the
members then share one dropout stream)."""


@dataclass(frozen=True)
class CreateEnsemble:
    """Makes an ensemble of ``splits`` members (a Linear and a Dropout each) with
    ``nnx.split_rngs`` around ``nnx.vmap``, from ``Rngs(params=seed, dropout=seed + 1)``,
    splitting the streams ``only`` names; in ``mode``."""

    splits: int
    only: str
    mode: gs.Mode
    seed: int

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        member = _member_class(nnx.Module)
        rngs = nnx.Rngs(params=self.seed, dropout=self.seed + 1)
        with self.mode.context(nnx):
            if self.only == "all":
                in_axes, out_axes, only = 0, 0, ...
            else:
                template = member(nnx, nnx.Rngs(params=0, dropout=0))
                in_axes = _axes(nnx, rngs, {"params": 0, ...: None}, self.mode)
                out_axes = _axes(nnx, template, {nnx.Param: 0, ...: None}, self.mode)
                only = "params"
            kwargs = self.mode.kwargs()
            create = nnx.vmap(lambda rngs: member(nnx, rngs), in_axes=(in_axes,), out_axes=out_axes, **kwargs)
            world.ensembles.append(nnx.split_rngs(splits=self.splits, only=only, **kwargs)(create)(rngs))
        return world.ensembles[-1]


@dataclass(frozen=True)
class CallEnsemble:
    """Calls ensemble ``target`` on :data:`programs.X` under ``nnx.vmap``, each member on
    its own dropout key (its own since its creation split every stream, else split now by
    ``nnx.split_rngs`` into as many keys as members), the Params and dropout stream
    mapped, the rest broadcast; in ``mode``."""

    target: int
    mode: gs.Mode

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        ensemble = world.ensembles[self.target % len(world.ensembles)]
        splits = ensemble.lin.kernel.shape[0]
        kwargs = self.mode.kwargs()
        with self.mode.context(nnx):
            axes = _axes(nnx, ensemble, {nnx.Param: 0, "dropout": 0, ...: None}, self.mode)
            forward = nnx.vmap(lambda m, x: m(x), in_axes=(axes, None), out_axes=0, **kwargs)
            if all(jnp.ndim(key) == 0 for key in jax.tree.leaves(nnx.state(ensemble, nnx.RngKey))):
                forward = nnx.split_rngs(splits=splits, only="dropout", **kwargs)(forward)
            return forward(ensemble, jnp.asarray(programs.X))
