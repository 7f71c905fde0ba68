"""Random multi-step NNX programs, drawn as plain data and run on either implementation.

A :class:`Program` is a sequence of steps: create a model (Linear, BatchNorm, Dropout,
nested Modules, an ``nnx.List`` of layers, shared Variables), call it eagerly or under
``nnx.jit`` / ``grad`` / ``vmap`` / ``scan``, switch it to train or eval, set
attributes, split and merge it, update it from a changed state, clone it, filter its
state, or step an ``nnx.Optimizer`` on it. Calls pick graph or tree mode and graph
updates per call or by the global switches (:class:`graph_strategies.Mode`).
:func:`run` runs a program with one implementation and snapshots, after every step,
what the step returned (or the exception it raised) and every model, so that a
differential test compares the two implementations step by step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from hypothesis import strategies as st

from . import graph_strategies as gs
from .describe import Described, describe

MODEL_KINDS = ("linear", "batchnorm", "dropout", "nested", "list", "shared")
"""The models a program creates; ``shared`` holds a submodule and a Param twice."""

TRANSFORMS = ("eager", "jit", "grad", "vmap", "scan")
"""How a program calls a model."""

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(3, 2)
"""The input of every call: a batch of three rows of two features."""


@functools.cache
def _net_class(module_base: type) -> type:
    """The model class of the programs, on one implementation's Module base."""
    return type("Net", (module_base,), {"__init__": _init_net, "__call__": _call_net, "__module__": __name__})


def _init_net(self: Any, nnx: Any, kind: str, seed: int) -> None:
    rngs = nnx.Rngs(seed, dropout=seed + 1)
    self.calls = nnx.BatchStat(jnp.zeros((), jnp.int32))
    if kind == "list":
        self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs), nnx.Linear(2, 2, rngs=rngs)])
        return
    self.lin = nnx.Linear(2, 2, rngs=rngs)
    if kind == "batchnorm":
        self.bn = nnx.BatchNorm(2, rngs=rngs)
    elif kind == "dropout":
        self.drop = nnx.Dropout(0.5, rngs=rngs)
    elif kind == "nested":
        self.inner = net(nnx, "batchnorm", seed + 2)
        self.drop = nnx.Dropout(0.25, rngs=rngs)
    elif kind == "shared":
        self.again = self.lin
        self.scale = nnx.Param(jnp.full((2,), 0.5))
        self.scale_again = self.scale


def _call_net(self: Any, x: Any) -> Any:
    self.calls[...] += 1
    for name in ("lin", "bn", "drop", "inner", "again"):
        if name in vars(self):
            x = getattr(self, name)(x)
    for layer in vars(self).get("layers", ()):
        x = layer(x)
    if "scale" in vars(self):
        x = x * self.scale[...] + self.scale_again[...]
    return x


def net(nnx: Any, kind: str, seed: int) -> Any:
    """A model of ``kind`` (one of :data:`MODEL_KINDS`) made with ``nnx``: ``net(x)`` maps
    (batch, 2) to (batch, 2) and counts its calls in a BatchStat."""
    return _net_class(nnx.Module)(nnx, kind, seed)


@dataclass
class World:
    """The models a program has made so far, and the Optimizers stepped on them by model number."""

    models: list[Any] = field(default_factory=list)
    optimizers: dict[int, Any] = field(default_factory=dict)

    def target(self, number: int) -> tuple[int, Any]:
        """The model a step's ``target`` names (numbers wrap around the models made)."""
        index = number % len(self.models)
        return index, self.models[index]


@dataclass(frozen=True)
class Create:
    """Makes a model of ``kind`` from ``seed``."""

    kind: str
    seed: int

    def __call__(self, nnx: Any, world: World) -> Any:
        world.models.append(net(nnx, self.kind, self.seed))
        return self.kind


def squared_loss(m: Any, x: Any) -> Any:
    """The sum of the squares of ``m(x)``: the loss of the programs' gradients."""
    return (m(x) ** 2).sum()


def grads(nnx: Any, model: Any, mode: gs.Mode, x: Any = X, loss: Any = squared_loss) -> Any:
    """The gradients of ``loss(model, x)`` by ``model``'s Params: ``nnx.grad`` of the Module
    itself in graph mode with graph updates, else (tree-like modes differentiate whole
    arguments) of its Params split from the rest, as the guides do it."""
    x = jnp.asarray(x)
    if mode.graph and mode.updates:
        return nnx.grad(loss, **mode.kwargs())(model, x)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    return nnx.grad(lambda params, rest: loss(nnx.merge(graphdef, params, rest), x), **mode.kwargs())(params, rest)


def _scan_step(m: Any, x: Any) -> Any:
    return m, m(x)


@dataclass(frozen=True)
class Call:
    """Calls model ``target`` on :data:`X`, eagerly or under one of :data:`TRANSFORMS`, in ``mode``."""

    target: int
    transform: str
    mode: gs.Mode

    def __call__(self, nnx: Any, world: World) -> Any:
        _, model = world.target(self.target)
        x, kwargs = jnp.asarray(X), self.mode.kwargs()
        with self.mode.context(nnx):
            if self.transform == "eager":
                return model(x)
            if self.transform == "jit":
                return nnx.jit(lambda m, x: m(x), **kwargs)(model, x)
            if self.transform == "grad":
                return grads(nnx, model, self.mode)
            if self.transform == "vmap":
                return nnx.vmap(lambda m, x: m(x), in_axes=(None, 0), **kwargs)(model, jnp.stack([x, -x]))
            scan = nnx.scan(_scan_step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kwargs)
            return scan(model, jnp.stack([x, 2 * x]))[1]


@dataclass(frozen=True)
class SetAttributes:
    """Changes model ``target``: ``train``, ``eval``, a static ``tag``, a new ``extra`` Param
    or a ``set_attributes`` of ``deterministic``."""

    target: int
    change: str

    def __call__(self, nnx: Any, world: World) -> Any:
        _, model = world.target(self.target)
        if self.change == "train":
            model.train()
        elif self.change == "eval":
            model.eval()
        elif self.change == "tag":
            model.tag = "tagged"
        elif self.change == "extra":
            model.extra = nnx.Param(jnp.ones(2))
        else:
            model.set_attributes(deterministic=True, raise_if_not_found=False)
        return self.change


@dataclass(frozen=True)
class _GraphStep:
    """A step that hands model ``target`` to a graph function, in graph mode or not (``graph``)."""

    target: int
    graph: bool

    def __call__(self, nnx: Any, world: World) -> Any:
        index, model = world.target(self.target)
        return self.apply(nnx, world, index, model)

    def apply(self, nnx: Any, world: World, index: int, model: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class SplitMerge(_GraphStep):
    """Splits model ``target`` into Params and the rest and merges it back, replacing it."""

    def apply(self, nnx: Any, world: World, index: int, model: Any) -> Any:
        graphdef, params, rest = nnx.split(model, nnx.Param, ..., graph=self.graph)
        world.models[index] = nnx.merge(graphdef, params, rest)
        return params, rest


@dataclass(frozen=True)
class Update(_GraphStep):
    """Writes model ``target``'s Params, scaled by ``factor``, back with ``nnx.update``."""

    factor: float

    def apply(self, nnx: Any, world: World, index: int, model: Any) -> Any:
        params = nnx.state(model, nnx.Param, graph=self.graph)
        nnx.update(model, jax.tree.map(lambda p: p * self.factor, params))
        return params


@dataclass(frozen=True)
class Clone(_GraphStep):
    """Adds a clone of model ``target``."""

    def apply(self, nnx: Any, world: World, index: int, model: Any) -> Any:
        world.models.append(nnx.clone(model, graph=self.graph))
        return None


@dataclass(frozen=True)
class FilterState(_GraphStep):
    """The part of model ``target``'s state a filter recipe selects."""

    recipe: gs.FilterRecipe

    def apply(self, nnx: Any, world: World, index: int, model: Any) -> Any:
        return nnx.state(model, gs.build_filter(nnx, self.recipe), graph=self.graph)


@dataclass(frozen=True)
class OptimizerStep:
    """One ``nnx.Optimizer`` (adam) step on model ``target``'s Params, with gradients taken in ``mode``."""

    target: int
    mode: gs.Mode

    def __call__(self, nnx: Any, world: World) -> Any:
        index, model = world.target(self.target)
        with self.mode.context(nnx):
            gradients = grads(nnx, model, self.mode)
            if index not in world.optimizers:
                world.optimizers[index] = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
            world.optimizers[index].update(model, gradients)
        return world.optimizers[index]


Step = Create | Call | SetAttributes | SplitMerge | Update | Clone | FilterState | OptimizerStep


@dataclass(frozen=True)
class Program:
    """The steps of a program, the first of which creates a model."""

    steps: tuple[Step, ...]

    def __repr__(self) -> str:
        return "Program(\n" + "".join(f"  {step!r},\n" for step in self.steps) + ")"


def run_step(nnx: Any, step: Any, world: World, snapshot: Any) -> Described:
    """Runs ``step(nnx, world)``; a snapshot of what it returned (or the name of the exception
    it raised: a program goes on after it) and of ``snapshot(world)``, the objects it changed."""
    try:
        result = step(nnx, world)
    except Exception as error:  # noqa: BLE001 - the exception type is part of the outcome
        result = ("raised", type(error).__name__)
    return Described(describe(nnx, (type(step).__name__, result, snapshot(world))))


def run(nnx: Any, program: Program) -> list[Described]:
    """Runs ``program`` with ``nnx``; after each step, a snapshot of what it returned (or the
    name of the exception it raised; the program goes on) and of every model."""
    world = World()
    return [run_step(nnx, step, world, lambda world: world.models) for step in program.steps]


def _modes(tree_only: bool) -> st.SearchStrategy[gs.Mode]:
    return gs.modes.filter(lambda mode: not mode.graph) if tree_only else gs.modes


def _steps(tree_only: bool) -> st.SearchStrategy[Step]:
    """Any step but a call."""
    targets = st.integers(0, 3)
    graph = st.just(False) if tree_only else st.booleans()
    return st.one_of(
        st.builds(Create, st.sampled_from(MODEL_KINDS[:-1] if tree_only else MODEL_KINDS), st.integers(0, 3)),
        st.builds(SetAttributes, targets, st.sampled_from(["train", "eval", "tag", "extra", "deterministic"])),
        st.builds(SplitMerge, targets, graph),
        st.builds(Update, targets, graph, st.sampled_from([0.5, -1.0])),
        st.builds(Clone, targets, graph),
        st.builds(FilterState, targets, graph, gs.filter_recipes),
        st.builds(OptimizerStep, targets, _modes(tree_only)),
    )


@st.composite
def programs(draw: st.DrawFn, *, tree_only: bool = False, max_steps: int = 3) -> Program:
    """A program: a created model, then up to ``max_steps`` drawn steps, each followed by a
    call; the calls go through the transforms in a drawn order, so that each gets its turn. With
    ``tree_only``, every step runs in tree mode and no model holds a shared reference
    (tree mode rejects them)."""
    kinds = MODEL_KINDS[:-1] if tree_only else MODEL_KINDS
    first = Create(draw(st.sampled_from(kinds), label="first model"), draw(st.integers(0, 3), label="seed"))
    order = draw(st.permutations(TRANSFORMS), label="order of the transforms of the calls")
    steps: list[Step] = [first]
    for index, step in enumerate(draw(st.lists(_steps(tree_only), min_size=1, max_size=max_steps), label="steps")):
        call = Call(
            draw(st.integers(0, 3), label="target"), order[index % len(order)], draw(_modes(tree_only), label="mode")
        )
        steps += [step, call]
    return Program(tuple(steps))
