"""More steps of random NNX programs, for the state machine of :mod:`program_machine`.

:mod:`programs` draws Nets (Linear, BatchNorm, Dropout, nested, listed, shared) and runs
them under jit, grad, vmap and scan; the steps here reach the rest of the API: layers
of every nn family built from drawn constructor arguments, nesting in ``Sequential``,
``List`` and ``Dict``, the other transforms (remat, value_and_grad, eval_shape, cond,
switch, fori_loop, while_loop, checkify, vmap with ``StateAxes`` or drawn ``out_axes``,
grad with ``DiffState``), one
jitted function called again between outside changes, attribute assignment and deletion
(plain arrays included), Variable metadata, graph utilities and metrics. Each step is
plain data and runs with either implementation on a :class:`MachineWorld`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import graph_strategies as gs
from . import programs
from .strategies import RECURRENT_CELLS, LayerArgs, layer_input

LAYER_TRANSFORMS = ("eager", "jit", "grad", "remat")
"""How a program calls a layer."""

NET_TRANSFORMS = (
    "remat",
    "value_and_grad",
    "eval_shape",
    "cond",
    "switch",
    "fori_loop",
    "while_loop",
    "vmap_state_axes",
    "vmap_out_axes",
    "checkify",
    "grad_diff_state",
)
"""The transforms a program calls a Net under, besides those of :data:`programs.TRANSFORMS`."""

CONTAINERS = ("Sequential", "List", "Dict")
"""What a program nests its models in."""

ATTRIBUTE_VALUES = ("array", "param", "int", "python_list_of_arrays", "nnx_list_of_arrays", "linear", "model")
"""What an attribute assignment sets: a plain array, a Param, a static int, a Python list
holding an array (not data: flax refuses it), an ``nnx.List`` of arrays, a new Linear, or
a model of the program made before (a shared reference; None for the first)."""

ATTRIBUTE_NAMES = ("extra", "tag", "lin", "bn", "arr", "group")
"""Attributes a program assigns or deletes (some the Nets have, some they do not)."""

GRAPH_OPS = (
    "pop_batch_stats",
    "graphdef_of_clone",
    "iter_graph",
    "variables",
    "recursive_map",
    "tree_round_trip",
    "view",
)
"""The graph utilities a program applies to a model."""

METRICS = ("Average", "Welford", "Accuracy", "MultiMetric")
"""The metrics a program updates and computes."""


@dataclass
class Layer:
    """A layer a program built, with its family and the drawn arguments it was built from
    (the shape of its input and the keywords of its calls among them)."""

    module: Any
    family: str
    args: LayerArgs


@dataclass
class MachineWorld(programs.World):
    """A program's objects: its Nets and Optimizers, its layers, its ensembles (Modules made
    under vmap, one member per index of their leading axis), its metrics by kind, its one
    cached jitted function and how often that one has traced."""

    layers: list[Layer] = field(default_factory=list)
    ensembles: list[Any] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    jitted: dict[str, Any] = field(default_factory=dict)
    traces: list[str] = field(default_factory=list)

    def layer(self, number: int) -> Layer:
        return self.layers[number % len(self.layers)]


def _layer_input(layer: Layer, seed: int) -> Any:
    if layer.family == "Embed":
        return jnp.asarray(np.random.default_rng(seed).integers(0, layer.module.num_embeddings, layer.args.input_shape))
    return jnp.asarray(layer_input(layer.args.input_shape, seed))


def _sum_loss(module: Any, x: Any, call: Any) -> Any:
    return sum(jnp.sum(y.astype(jnp.float32)) for y in jax.tree.leaves(call(module, x)))


@dataclass(frozen=True)
class CreateLayer:
    """Builds the nn layer ``family`` from drawn arguments (a recurrent cell inside ``nnx.RNN``)."""

    family: str
    args: LayerArgs
    seed: int

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        rngs = nnx.Rngs(self.seed, dropout=self.seed + 1)
        module = self.args.build(nnx, self.family, rngs)
        if self.family in RECURRENT_CELLS:
            module = nnx.RNN(module, rngs=rngs)
        world.layers.append(Layer(module, self.family, self.args))
        return module


@dataclass(frozen=True)
class CallLayer:
    """Calls layer ``target`` on an input drawn from ``seed``, eagerly or under one of
    :data:`LAYER_TRANSFORMS` in ``mode``."""

    target: int
    transform: str
    mode: gs.Mode
    seed: int

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        layer = world.layer(self.target)
        x, kwargs = _layer_input(layer, self.seed), self.mode.kwargs()

        def call(module: Any, x: Any) -> Any:  # a function of its own: jit keys its cache by it
            return layer.args.call(module, x)

        with self.mode.context(nnx):
            if self.transform == "eager":
                return call(layer.module, x)
            if self.transform == "jit":
                return nnx.jit(call, **kwargs)(layer.module, x)
            if self.transform == "remat":
                return nnx.remat(call, **kwargs)(layer.module, x)
            return programs.grads(nnx, layer.module, self.mode, x, functools.partial(_sum_loss, call=call))


def _negated(m: Any, x: Any) -> Any:
    return -m(x)


@dataclass(frozen=True)
class TransformCall:
    """Calls Net ``target`` on :data:`programs.X` under one of :data:`NET_TRANSFORMS` in ``mode``;
    ``branch`` picks cond's or switch's branch, the number of loop iterations and vmap's
    ``out_axes``, ``recipe``
    the filter of ``DiffState`` and ``StateAxes``."""

    target: int
    transform: str
    mode: gs.Mode
    branch: int
    recipe: gs.FilterRecipe

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        x, kwargs, n = jnp.asarray(programs.X), self.mode.kwargs(), self.branch
        with self.mode.context(nnx):
            if self.transform == "remat":
                return nnx.remat(lambda m, x: m(x), **kwargs)(model, x)
            if self.transform == "value_and_grad":
                loss = lambda m, x: (jnp.sum(m(x) ** 2), m(x))  # noqa: E731
                return nnx.value_and_grad(loss, has_aux=True, **kwargs)(model, x)
            if self.transform == "eval_shape":
                return nnx.eval_shape(lambda m, x: m(x), model, x, **kwargs)
            if self.transform == "cond":
                return nnx.cond(n % 2 == 0, lambda m, x: m(x), _negated, model, x, **kwargs)
            if self.transform == "switch":
                return nnx.switch(n % 3, [lambda m, x: m(x), _negated, lambda m, x: 2 * m(x)], model, x, **kwargs)
            if self.transform == "fori_loop":
                return nnx.fori_loop(0, n, lambda i, carry: (carry[0], carry[0](carry[1])), (model, x), **kwargs)[1]
            if self.transform == "while_loop":

                def body(carry: Any) -> Any:
                    return carry[0], carry[0](carry[1]), carry[2] + 1

                return nnx.while_loop(lambda carry: carry[2] < n, body, (model, x, 0), **kwargs)[1:]
            if self.transform == "vmap_out_axes":
                return nnx.vmap(lambda m, x: m(x), in_axes=(None, 0), out_axes=n % 2, **kwargs)(
                    model, jnp.stack([x, -x])
                )
            if self.transform == "checkify":
                return nnx.checkify(lambda m, x: m(x), **kwargs)(model, x)[1]
            state_filter = gs.build_filter(nnx, self.recipe)
            if self.transform == "vmap_state_axes":
                axes = nnx.StateAxes({state_filter: None, ...: None})
                return nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0), **kwargs)(model, jnp.stack([x, -x]))
            return nnx.grad(programs.squared_loss, argnums=nnx.DiffState(0, state_filter), **kwargs)(model, x)


@dataclass(frozen=True)
class CachedJitCall:
    """Calls Net ``target`` through the program's one jitted function (made at its first
    call, in ``mode``); the trace count tells when it traced again after outside changes."""

    target: int
    mode: gs.Mode

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        if "net" not in world.jitted:

            def forward(m: Any, x: Any) -> Any:
                world.traces.append("traced")
                return m(x)

            world.jitted["net"] = nnx.jit(forward, **self.mode.kwargs())
        with self.mode.context(nnx):
            return world.jitted["net"](model, jnp.asarray(programs.X)), len(world.traces)


@dataclass(frozen=True)
class Nest:
    """Puts Nets ``targets`` into a ``Sequential`` (a new model of the program, called like
    the others), or into an ``nnx.List`` or ``nnx.Dict`` set as attribute ``group`` of the
    last made of them (shared references to the earlier ones: a model only ever refers to
    models made before it, so no program makes a cycle)."""

    container: str
    targets: tuple[int, ...]

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        numbered = dict(world.target(t) for t in self.targets)
        if self.container == "Sequential":
            world.models.append(nnx.Sequential(*numbered.values()))
            return world.models[-1]
        last = max(numbered)
        holder, others = numbered[last], [numbered[i] for i in sorted(numbered) if i < last]
        holder.group = (
            nnx.List(others) if self.container == "List" else nnx.Dict({f"m{i}": m for i, m in enumerate(others)})
        )
        return holder.group


@dataclass(frozen=True)
class Assign:
    """Sets attribute ``name`` of Net ``target`` to a value of kind ``value`` (:data:`ATTRIBUTE_VALUES`)."""

    target: int
    name: str
    value: str
    other: int

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        index, model = world.target(self.target)
        values = {
            "array": lambda: jnp.arange(2.0),
            "param": lambda: nnx.Param(jnp.ones(2)),
            "int": lambda: 3,
            "python_list_of_arrays": lambda: [jnp.ones(1)],
            "nnx_list_of_arrays": lambda: nnx.List([jnp.ones(1), jnp.zeros(2)]),
            "linear": lambda: nnx.Linear(2, 2, rngs=nnx.Rngs(self.other)),
            "model": lambda: world.models[self.other % index] if index else None,
        }
        setattr(model, self.name, values[self.value]())
        return getattr(model, self.name)


@dataclass(frozen=True)
class Delete:
    """Deletes attribute ``name`` of Net ``target``."""

    target: int
    name: str

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        delattr(model, self.name)
        return self.name


@dataclass(frozen=True)
class SetMetadata:
    """Sets metadata ``key`` to ``value`` on the ``which``-th Variable of Net ``target``."""

    target: int
    which: int
    key: str
    value: Any

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        _, model = world.target(self.target)
        found = [v for _, v in nnx.iter_graph(model) if isinstance(v, nnx.Variable)]
        variable = found[self.which % len(found)]
        variable.set_metadata(**{self.key: self.value})
        return variable.get_metadata()


@dataclass(frozen=True)
class GraphOp:
    """One of :data:`GRAPH_OPS` on Net ``target`` in graph or tree mode."""

    target: int
    op: str
    graph: bool

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        index, model = world.target(self.target)
        if self.op == "pop_batch_stats":
            return nnx.pop(model, nnx.BatchStat)
        if self.op == "graphdef_of_clone":
            return nnx.graphdef(model, graph=self.graph) == nnx.graphdef(
                nnx.clone(model, graph=self.graph), graph=self.graph
            )
        if self.op == "iter_graph":
            return [(path, type(node).__name__) for path, node in nnx.iter_graph(model, graph=self.graph)]
        if self.op == "variables":
            return nnx.variables(model, nnx.Param, graph=self.graph)
        if self.op == "recursive_map":

            def double(path: Any, node: Any) -> Any:
                return node.replace(node[...] * 2) if isinstance(node, nnx.Param) else node

            world.models[index] = nnx.recursive_map(double, model, graph=self.graph)
            return world.models[index]
        if self.op == "tree_round_trip":
            return nnx.from_tree(nnx.to_tree(model))
        return nnx.view(model, deterministic=True, raise_if_not_found=False, graph=self.graph)


@dataclass(frozen=True)
class MetricStep:
    """Updates the program's metric of ``kind`` (made at first use) with ``values`` and computes it."""

    kind: str
    values: tuple[float, ...]

    def __call__(self, nnx: Any, world: MachineWorld) -> Any:
        values = jnp.asarray(self.values, jnp.float32)
        labels = (values > 0).astype(jnp.int32)
        logits = jnp.stack([-values, values], axis=-1)
        if self.kind not in world.metrics:
            world.metrics[self.kind] = {
                "Average": lambda: nnx.metrics.Average(),
                "Welford": lambda: nnx.metrics.Welford(),
                "Accuracy": lambda: nnx.metrics.Accuracy(),
                "MultiMetric": lambda: nnx.MultiMetric(
                    loss=nnx.metrics.Average("loss"), accuracy=nnx.metrics.Accuracy()
                ),
            }[self.kind]()
        metric = world.metrics[self.kind]
        if self.kind == "Accuracy":
            metric.update(logits=logits, labels=labels)
        elif self.kind == "MultiMetric":
            metric.update(loss=values, logits=logits, labels=labels)
        else:
            metric.update(values=values)
        return metric.compute()


def snapshot(world: MachineWorld) -> Any:
    """What a step is compared by besides its result: every object of the program (its layers
    and ensembles among them) and the trace count of its cached jitted function."""
    layers = [layer.module for layer in world.layers]
    return (world.models, world.optimizers, layers, world.ensembles, world.metrics, len(world.traces))
