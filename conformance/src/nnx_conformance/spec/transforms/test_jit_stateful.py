"""A stateful differential test of ``nnx.jit``: one jitted function called again and again
while the program changes its arguments between calls in every way Python allows, each
call compared with flax.nnx's.

Two programs run side by side, one on flax.nnx and one on the implementation, each on
its own two models; every step (a change, then two calls) runs on both through
:func:`assert_same`, which compares what the calls return, the models' state after
them, or what the step raises. The changes: Variable
values and metadata, attribute assignment and deletion, ``object.__setattr__``,
``vars(m)`` edits, ``object.__delattr__``, an in-place ``__setstate__``, List and Dict
edits, ``train()``/``eval()``, a model replaced by a new one (which may reuse the freed
one's id), a model's or a Variable's class and a model's attribute dict rebound with
``object.__setattr__``, a Variable's metadata mapping rebound or changed with ``dict``'s own
methods, the two arguments swapped or the same model passed twice; the jitted function
is made in graph mode with or without graph updates, or in tree mode, with or without
donation. Whatever an implementation caches between calls, each call must give flax's result.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

STEPS = 8
"""Steps per program: each program compiles anew, so programs stay short and many."""

MODES: dict[str, dict[str, Any]] = {
    "graph mode with graph updates": {"graph": True, "graph_updates": True},
    "graph mode without graph updates": {"graph": True, "graph_updates": False},
    "tree mode": {"graph": False, "graph_updates": False},
}

small = st.integers(-3, 3).map(float)
slots = st.sampled_from([0, 1])


@functools.cache
def _model_class(nnx: Any) -> type:
    """A Module holding every kind of state: Params, a BatchStat, a plain array, a List,
    a Dict and a BatchNorm (which ``train()``/``eval()`` switch)."""

    class Model(nnx.Module):
        factor = 1.0  # a class attribute the step reads: a subclass changes it

        def __init__(self, seed: float) -> None:
            self.w = nnx.Param(jnp.full(2, seed), scale=1.0)
            self.s = nnx.BatchStat(jnp.zeros(2))
            self.count = jnp.zeros(())
            self.items = nnx.List([nnx.Param(jnp.full(2, seed + 1))])
            self.table = nnx.Dict(a=nnx.Param(jnp.full(2, seed + 2)))
            self.bn = nnx.BatchNorm(2, rngs=nnx.Rngs(0))

    return Model


@functools.cache
def _scaled_class(nnx: Any) -> type:
    """A subclass of the model class with another ``factor``: what a call reads changes with the class."""
    return type("Scaled", (_model_class(nnx),), {"factor": 3.0})


def _attributes(model: Any) -> list[tuple[str, Any]]:
    """The public attributes of ``model``, sorted by name."""
    return sorted((name, value) for name, value in vars(model).items() if not name.startswith("_"))


def _summary(nnx: Any, value: Any) -> Any:
    """A number from every Variable and plain array ``value`` holds (through its public
    attributes, List items and Dict entries), each weighted by its place, Variables scaled
    by their ``scale`` metadata; a BatchNorm counts through its output only."""
    if isinstance(value, nnx.Variable):
        return jnp.sum(value[...]) * value.get_metadata().get("scale", 1.0)
    if isinstance(value, jax.Array):
        return jnp.sum(value)
    if isinstance(value, nnx.List):
        parts = list(value)
    elif isinstance(value, nnx.Dict):
        parts = [item for _, item in sorted(value.items())]
    elif isinstance(value, nnx.Module) and not isinstance(value, nnx.BatchNorm):
        parts = [item for _, item in _attributes(value)]
    else:
        return jnp.zeros(())
    return sum((_summary(nnx, part) * (index + 1) for index, part in enumerate(parts)), jnp.zeros(()))


def _step(nnx: Any, rebinds: bool) -> Callable[[Any, Any, Any], Any]:
    """The function under ``jit``: reads both models, runs the first's BatchNorm, writes its
    BatchStat in place and, with ``rebinds``, rebinds its plain array attribute (kept only
    by graph updates)."""

    def step(a: Any, b: Any, x: Any) -> Any:
        y = a.bn(x)
        a.s[...] = a.s[...] + 1.0
        if rebinds:
            a.count = a.count + 1.0
        return jnp.sum(y) + _summary(nnx, a) * a.factor + 2.0 * _summary(nnx, b)

    return step


@dataclass
class World:
    """One side's program: its nnx, its two models, the argument order, the jitted function and its input."""

    nnx: Any
    models: list[Any] = field(default_factory=list)
    order: tuple[int, int] = (0, 1)
    jitted: Any = None
    x: Any = field(default_factory=lambda: jnp.ones((3, 2)))


def _observed(nnx: Any, model: Any) -> Any:
    """What a step shows of a model: its state, and its plain arrays by name."""
    plain = {name: value for name, value in _attributes(model) if isinstance(value, jax.Array)}
    return nnx.state(model), plain


class JitCallSequence(RuleBasedStateMachine):
    """Steps on two worlds, flax's first: each rule is one :func:`assert_same` of a scenario
    that applies the step to the world of the side it is given."""

    def __init__(self, nnx: Any, flax_nnx: Any) -> None:
        super().__init__()
        self.flax_nnx, self.nnx = flax_nnx, nnx
        self.worlds = [World(flax_nnx.nnx), World(nnx)]
        self.turn = 0

    def same(self, change: Callable[[World], Any]) -> None:
        """Runs ``change`` then two calls on both worlds (flax's first, as assert_same does) and
        compares what they return or raise: the first call after a change, and the second
        (that an implementation may have cached the first's work for)."""

        def scenario(_: Any) -> Any:
            world = self.worlds[self.turn % 2]
            self.turn += 1
            change(world)
            first, second = (world.models[i] for i in world.order)
            outputs = [world.jitted(first, second, world.x) for _ in range(2)]
            return outputs, [_observed(world.nnx, m) for m in world.models]

        assert_same(self.flax_nnx, self.nnx, scenario)

    @initialize(
        mode=st.sampled_from(sorted(MODES)), donate=st.booleans(), rebinds=st.booleans(), seeds=st.tuples(small, small)
    )
    def make(self, mode: str, donate: bool, rebinds: bool, seeds: tuple[float, float]) -> None:
        def make(world: World) -> None:
            model = _model_class(world.nnx)
            world.models = [model(seeds[0]), model(seeds[1])]
            options = {**MODES[mode], "donate_argnums": 0 if donate else None}
            world.jitted = world.nnx.jit(_step(world.nnx, rebinds), **options)

        self.same(make)

    @rule(scale=small, rows=st.sampled_from([3, 4]))
    def new_input(self, scale: float, rows: int) -> None:
        """Another input, of the same shape or another (a new trace on a cached structure)."""
        self.same(lambda world: setattr(world, "x", jnp.full((rows, 2), scale) + jnp.arange(2.0)))

    @rule()
    def swap_arguments(self) -> None:
        self.same(lambda world: setattr(world, "order", world.order[::-1]))

    @rule(slot=slots)
    def pass_one_model_twice(self, slot: int) -> None:
        self.same(lambda world: setattr(world, "order", (slot, slot)))

    @rule(slot=slots, seed=small)
    def replace_model(self, slot: int, seed: float) -> None:
        """A new model in the slot, made after the old one is collected (its id may be reused)."""

        def replace(world: World) -> None:
            world.models[slot] = None
            gc.collect()
            world.models[slot] = _model_class(world.nnx)(seed)

        self.same(replace)

    @rule(slot=slots, value=small)
    def set_variable_value(self, slot: int, value: float) -> None:
        self.same(lambda world: world.models[slot].w.__setitem__(..., jnp.full(2, value)))

    @rule(slot=slots, scale=st.sampled_from([0.5, 2.0, 3.0]))
    def set_variable_metadata(self, slot: int, scale: float) -> None:
        self.same(lambda world: world.models[slot].w.set_metadata("scale", scale))

    @rule(slot=slots, scale=st.sampled_from([0.5, 2.0, 3.0]))
    def update_metadata_mapping_in_place(self, slot: int, scale: float) -> None:
        self.same(lambda world: world.models[slot].w._var_metadata.update(scale=scale))

    @rule(slot=slots, scale=st.sampled_from([0.5, 2.0, 3.0]))
    def rebind_metadata_mapping(self, slot: int, scale: float) -> None:
        def rebind(world: World) -> None:
            param = world.models[slot].w
            object.__setattr__(param, "_var_metadata", {**param.get_metadata(), "scale": scale})

        self.same(rebind)

    @rule(slot=slots, scale=st.sampled_from([0.5, 2.0, 3.0]))
    def set_metadata_item_with_dicts_own_method(self, slot: int, scale: float) -> None:
        self.same(lambda world: dict.__setitem__(world.models[slot].w._var_metadata, "scale", scale))

    @rule(slot=slots, scaled=st.booleans())
    def rebind_model_class(self, slot: int, scaled: bool) -> None:
        def rebind(world: World) -> None:
            cls = _scaled_class(world.nnx) if scaled else _model_class(world.nnx)
            object.__setattr__(world.models[slot], "__class__", cls)

        self.same(rebind)

    @rule(slot=slots, stat=st.booleans())
    def rebind_variable_class(self, slot: int, stat: bool) -> None:
        def rebind(world: World) -> None:
            object.__setattr__(world.models[slot].w, "__class__", world.nnx.BatchStat if stat else world.nnx.Param)

        self.same(rebind)

    @rule(slot=slots, value=st.none() | small)
    def rebind_attribute_dict(self, slot: int, value: float | None) -> None:
        """A new attribute dict: a copy (later changes go to it), or one with another ``w``."""

        def rebind(world: World) -> None:
            model = world.models[slot]
            attributes = dict(vars(model))
            if value is not None:
                attributes["w"] = world.nnx.Param(jnp.full(2, value), scale=1.0)
            object.__setattr__(model, "__dict__", attributes)

        self.same(rebind)

    @rule(slot=slots, how=st.sampled_from(["setattr", "object.__setattr__", "vars", "vars.update"]), value=small)
    def rebind_param(self, slot: int, how: str, value: float) -> None:
        def rebind(world: World) -> None:
            model, param = world.models[slot], world.nnx.Param(jnp.full(2, value), scale=1.0)
            REBINDS[how](model, "w", param)

        self.same(rebind)

    @rule(slot=slots, how=st.sampled_from(["setattr", "object.__setattr__", "vars"]), value=small)
    def rebind_plain_array(self, slot: int, how: str, value: float) -> None:
        self.same(lambda world: REBINDS[how](world.models[slot], "count", jnp.full((), value)))

    @rule(slot=slots, value=small)
    def add_attribute(self, slot: int, value: float) -> None:
        self.same(lambda world: setattr(world.models[slot], "extra", world.nnx.Param(jnp.full(2, value))))

    @rule(slot=slots, how=st.sampled_from(["delattr", "object.__delattr__", "vars.pop"]))
    def delete_attribute(self, slot: int, how: str) -> None:
        self.same(lambda world: DELETES[how](world.models[slot], "extra"))

    @rule(slot=slots, value=small)
    def set_state_in_place(self, slot: int, value: float) -> None:
        def set_state(world: World) -> None:
            model = world.models[slot]
            model.__setstate__({**model.__getstate__(), "w": world.nnx.Param(jnp.full(2, value), scale=1.0)})

        self.same(set_state)

    @rule(slot=slots, edit=st.sampled_from(["append", "set", "pop"]), value=small)
    def edit_list(self, slot: int, edit: str, value: float) -> None:
        def edit_items(world: World) -> None:
            items, param = world.models[slot].items, world.nnx.Param(jnp.full(2, value))
            LIST_EDITS[edit](items, param)

        self.same(edit_items)

    @rule(slot=slots, edit=st.sampled_from(["set", "delete"]), key=st.sampled_from(["a", "b"]), value=small)
    def edit_dict(self, slot: int, edit: str, key: str, value: float) -> None:
        def edit_table(world: World) -> None:
            table = world.models[slot].table
            if edit == "set":
                table[key] = world.nnx.Param(jnp.full(2, value))
            else:
                del table[key]

        self.same(edit_table)

    @rule(slot=slots, training=st.booleans())
    def train_or_eval(self, slot: int, training: bool) -> None:
        self.same(lambda world: world.models[slot].train() if training else world.models[slot].eval())


REBINDS: dict[str, Callable[[Any, str, Any], None]] = {
    "setattr": setattr,
    "object.__setattr__": object.__setattr__,
    "vars": lambda m, name, value: vars(m).__setitem__(name, value),
    "vars.update": lambda m, name, value: vars(m).update({name: value}),
}
"""The ways to bind an attribute: plain assignment and three that bypass ``__setattr__``."""

DELETES: dict[str, Callable[[Any, str], None]] = {
    "delattr": delattr,
    "object.__delattr__": object.__delattr__,
    "vars.pop": lambda m, name: vars(m).pop(name),
}
"""The ways to delete an attribute."""

LIST_EDITS: dict[str, Callable[[Any, Any], None]] = {
    "append": lambda items, p: items.append(p),
    "set": lambda items, p: items.__setitem__(0, p),
    "pop": lambda items, p: items.pop(),
}
"""Edits of a model's List."""


@pytest.mark.apis("jit", "Module", "List", "Dict", "BatchNorm")
@pytest.mark.documented(None)
def test_a_jitted_function_called_between_any_changes_agrees_with_flax(nnx: Any, flax_nnx: Any) -> None:
    run_state_machine_as_test(
        lambda: JitCallSequence(nnx, flax_nnx),
        settings=settings(settings.default, stateful_step_count=STEPS),
    )
