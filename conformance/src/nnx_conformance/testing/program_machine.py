"""A hypothesis state machine that writes random NNX programs from the whole API and runs
each step on the implementation under test and on flax.nnx beside it.

Every rule is one step (:mod:`programs`, :mod:`program_steps`, :mod:`program_lifts`) run
on both sides, each on a world of its own; after it, the step's result (or its exception's
type), the warnings it emitted (by category) and every object of the program (Nets,
Optimizers, layers, ensembles, metrics, the cached jitted function's trace count) must
agree (``assert_same``). A failing program shrinks to the shortest sequence of steps that
still differs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from . import graph_strategies as gs
from . import program_lifts as pl
from . import program_steps as ps
from . import programs, strategies
from .assertions import assert_same

TARGETS = st.integers(0, 5)
"""Which model (or layer) a step acts on: numbers wrap around those made."""

DEVICES = st.integers(1, 3)
"""How many of the suite's devices (eight virtual ones on CPU) a pmap or shard_map step maps over."""

_LAYER_ARGS: dict[str, Callable[[], st.SearchStrategy[strategies.LayerArgs]]] = {
    "Linear": strategies.linear_args,
    "LinearGeneral": strategies.linear_general_args,
    "Einsum": strategies.einsum_args,
    "Conv": strategies.conv_args,
    "ConvTranspose": lambda: strategies.conv_args(transpose=True),
    "Embed": strategies.embed_args,
    "BatchNorm": lambda: strategies.norm_args("BatchNorm"),
    "LayerNorm": lambda: strategies.norm_args("LayerNorm"),
    "RMSNorm": lambda: strategies.norm_args("RMSNorm"),
    "GroupNorm": lambda: strategies.norm_args("GroupNorm"),
    "InstanceNorm": lambda: strategies.norm_args("InstanceNorm"),
    "MultiHeadAttention": strategies.attention_args,
    "LoRA": strategies.lora_args,
    "LoRALinear": strategies.lora_linear_args,
    "Bidirectional": strategies.bidirectional_args,
    "Dropout": strategies.dropout_args,
    **dict.fromkeys(strategies.RECURRENT_CELLS, strategies.cell_args),
}
"""The drawn constructor arguments of each nn layer family a program builds."""


@st.composite
def layers(draw: st.DrawFn) -> ps.CreateLayer:
    """A layer of a drawn family with drawn constructor arguments."""
    family = draw(st.sampled_from(sorted(_LAYER_ARGS)), label="layer family")
    return ps.CreateLayer(family, draw(_LAYER_ARGS[family](), label=f"{family} arguments"), draw(st.integers(0, 3)))


metadata_values = st.one_of(st.integers(-2, 2), st.sampled_from(["alpha", "beta"]), st.none())


class ProgramMachine(RuleBasedStateMachine):
    """Random programs over the whole API, compared step by step with flax.nnx.

    Subclassed per test by :func:`machine_for` with the two implementations.
    """

    yardstick: Any
    nnx: Any
    programs_run: int = 0
    steps_run: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.worlds = (ps.MachineWorld(), ps.MachineWorld())
        type(self).programs_run += 1

    @property
    def has_ensembles(self) -> bool:
        """Whether the program has made an ensemble (on flax's side, which runs first)."""
        return bool(self.worlds[0].ensembles)

    def _step(self, step: Any) -> None:
        """Runs ``step`` on flax's world, then on the implementation's, and compares them."""
        worlds = iter(self.worlds)  # assert_same runs flax.nnx first, then the implementation

        def scenario(nnx: Any) -> Any:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                described = programs.run_step(nnx, step, next(worlds), ps.snapshot)
            return described, sorted({w.category.__name__ for w in caught})

        type(self).steps_run += 1
        assert_same(self.yardstick, self.nnx, scenario)

    @initialize(kind=st.sampled_from(programs.MODEL_KINDS), seed=st.integers(0, 3))
    def create_first_net(self, kind: str, seed: int) -> None:
        self._step(programs.Create(kind, seed))

    @initialize(layer=layers())
    def create_first_layer(self, layer: ps.CreateLayer) -> None:
        self._step(layer)

    @rule(kind=st.sampled_from(programs.MODEL_KINDS), seed=st.integers(0, 3))
    def create_net(self, kind: str, seed: int) -> None:
        self._step(programs.Create(kind, seed))

    @rule(layer=layers())
    def create_layer(self, layer: ps.CreateLayer) -> None:
        self._step(layer)

    @rule(number=TARGETS, transform=st.sampled_from(ps.LAYER_TRANSFORMS), mode=gs.modes, seed=st.integers(0, 3))
    def call_layer(self, number: int, transform: str, mode: gs.Mode, seed: int) -> None:
        self._step(ps.CallLayer(number, transform, mode, seed))

    @rule(number=TARGETS, transform=st.sampled_from(programs.TRANSFORMS), mode=gs.modes)
    def call_net(self, number: int, transform: str, mode: gs.Mode) -> None:
        self._step(programs.Call(number, transform, mode))

    @rule(
        number=TARGETS,
        transform=st.sampled_from(ps.NET_TRANSFORMS),
        mode=gs.modes,
        branch=st.integers(0, 3),
        recipe=gs.filter_recipes,
    )
    def transform_net(self, number: int, transform: str, mode: gs.Mode, branch: int, recipe: gs.FilterRecipe) -> None:
        self._step(ps.TransformCall(number, transform, mode, branch, recipe))

    @rule(number=TARGETS, mode=gs.modes, devices=DEVICES, mean=st.booleans())
    def pmap_net(self, number: int, mode: gs.Mode, devices: int, mean: bool) -> None:
        self._step(pl.PmapCall(number, mode, devices, mean))

    @rule(number=TARGETS, mode=gs.modes, devices=DEVICES, shard_rows=st.booleans())
    def shard_map_net(self, number: int, mode: gs.Mode, devices: int, shard_rows: bool) -> None:
        self._step(pl.ShardMapCall(number, mode, devices, shard_rows))

    @rule(number=TARGETS, mode=gs.modes)
    def custom_vjp_net(self, number: int, mode: gs.Mode) -> None:
        self._step(pl.CustomVjpCall(number, mode))

    @rule(splits=st.integers(1, 3), only=st.sampled_from(pl.ONLY), mode=gs.modes, seed=st.integers(0, 3))
    def create_ensemble(self, splits: int, only: str, mode: gs.Mode, seed: int) -> None:
        self._step(pl.CreateEnsemble(splits, only, mode, seed))

    @precondition(lambda self: self.has_ensembles)
    @rule(number=TARGETS, mode=gs.modes)
    def call_ensemble(self, number: int, mode: gs.Mode) -> None:
        self._step(pl.CallEnsemble(number, mode))

    @rule(number=TARGETS, mode=gs.modes)
    def call_cached_jit(self, number: int, mode: gs.Mode) -> None:
        self._step(ps.CachedJitCall(number, mode))

    @rule(number=TARGETS, change=st.sampled_from(["train", "eval", "tag", "extra", "deterministic"]))
    def set_attributes(self, number: int, change: str) -> None:
        self._step(programs.SetAttributes(number, change))

    @rule(
        number=TARGETS,
        name=st.sampled_from(ps.ATTRIBUTE_NAMES),
        value=st.sampled_from(ps.ATTRIBUTE_VALUES),
        other=TARGETS,
    )
    def assign(self, number: int, name: str, value: str, other: int) -> None:
        self._step(ps.Assign(number, name, value, other))

    @rule(number=TARGETS, name=st.sampled_from(ps.ATTRIBUTE_NAMES))
    def delete(self, number: int, name: str) -> None:
        self._step(ps.Delete(number, name))

    @rule(container=st.sampled_from(ps.CONTAINERS), members=st.lists(TARGETS, min_size=1, max_size=3).map(tuple))
    def nest(self, container: str, members: tuple[int, ...]) -> None:
        self._step(ps.Nest(container, members))

    @rule(
        number=TARGETS,
        which=st.integers(0, 7),
        key=st.sampled_from(["tag", "note", "sharding_names"]),
        value=metadata_values,
    )
    def set_metadata(self, number: int, which: int, key: str, value: Any) -> None:
        self._step(ps.SetMetadata(number, which, key, value))

    @rule(number=TARGETS, graph=st.booleans())
    def split_merge(self, number: int, graph: bool) -> None:
        self._step(programs.SplitMerge(number, graph))

    @rule(number=TARGETS, factor=st.sampled_from([0.5, -1.0]), graph=st.booleans())
    def update(self, number: int, factor: float, graph: bool) -> None:
        self._step(programs.Update(number, factor, graph))

    @rule(number=TARGETS, graph=st.booleans())
    def clone(self, number: int, graph: bool) -> None:
        self._step(programs.Clone(number, graph))

    @rule(number=TARGETS, recipe=gs.filter_recipes, graph=st.booleans())
    def filter_state(self, number: int, recipe: gs.FilterRecipe, graph: bool) -> None:
        self._step(programs.FilterState(number, recipe, graph))

    @rule(number=TARGETS, op=st.sampled_from(ps.GRAPH_OPS), graph=st.booleans())
    def graph_op(self, number: int, op: str, graph: bool) -> None:
        self._step(ps.GraphOp(number, op, graph))

    @rule(number=TARGETS, mode=gs.modes)
    def optimizer_step(self, number: int, mode: gs.Mode) -> None:
        self._step(programs.OptimizerStep(number, mode))

    @rule(
        kind=st.sampled_from(ps.METRICS),
        values=st.lists(st.sampled_from([-1.5, -0.5, 0.0, 2.0]), min_size=1, max_size=3).map(tuple),
    )
    def metric_step(self, kind: str, values: tuple[float, ...]) -> None:
        self._step(ps.MetricStep(kind, values))


def machine_for(yardstick: Any, nnx: Any) -> type[ProgramMachine]:
    """The machine comparing ``nnx`` with flax.nnx (the ``flax_nnx`` fixture)."""
    return type(
        "ProgramMachine", (ProgramMachine,), {"yardstick": yardstick, "nnx": nnx, "programs_run": 0, "steps_run": 0}
    )
