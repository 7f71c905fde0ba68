"""Stateful programs: what the transform laws run eagerly and under each transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from hypothesis import strategies as st

from .nodes import classes

TRANSFORM_VALUE_TARGETS = ("params.w", "state.stat")
"""The float Variables a drawn operation updates: a Param and a BatchStat, both of shape (2,)."""

SOWN_NAMES = ("h", "z")
"""Names under which drawn operations sow Intermediates."""

small_floats: st.SearchStrategy[list[float]] = st.lists(st.integers(-4, 4).map(float), min_size=2, max_size=2)
"""Two small integral floats: initial values of a stateful model's Variables."""


def stateful_models(nnx: Any) -> st.SearchStrategy[Any]:
    """A Module ``params.w`` (Param), ``state.stat`` (BatchStat) and ``state.rngs`` (an
    Rngs with ``params`` and ``default`` streams), the state that drawn operations change.

    Params and the rest sit in two sub-Modules so that tree-mode ``grad``, which
    differentiates whole arguments, can take them as separate arguments."""
    node = classes(nnx).node

    def build(w: list[float], stat: list[float], seeds: tuple[int, int]) -> Any:
        params = node(w=nnx.Param(jnp.asarray(w, dtype="float32")))
        rngs = nnx.Rngs(params=seeds[0], default=seeds[1])
        return node(params=params, state=node(stat=nnx.BatchStat(jnp.asarray(stat, dtype="float32")), rngs=rngs))

    seeds = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
    return st.builds(build, small_floats, small_floats, seeds)


@dataclass(frozen=True)
class _VariableOperation:
    """An in-place change of the Variable at ``target`` (``"<part>.<name>"`` of the model)."""

    target: str

    def __call__(self, nnx: Any, model: Any) -> None:
        part, name = self.target.split(".")
        self.change(model, getattr(getattr(model, part), name))

    def change(self, model: Any, variable: Any) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Scale(_VariableOperation):
    """``v[...] = v[...] * factor`` on the Variable at ``target``."""

    factor: float

    def change(self, model: Any, variable: Any) -> None:
        variable[...] = variable[...] * self.factor


@dataclass(frozen=True)
class Shift(_VariableOperation):
    """``v[...] += amount`` on the Variable at ``target``."""

    amount: float

    def change(self, model: Any, variable: Any) -> None:
        variable[...] += self.amount


@dataclass(frozen=True)
class AddNoise(_VariableOperation):
    """Adds uniform noise drawn from the Rngs stream ``stream`` to the Variable at ``target``."""

    stream: str

    def change(self, model: Any, variable: Any) -> None:
        key = getattr(model.state.rngs, self.stream)()
        variable[...] = variable[...] + jax.random.uniform(key, variable[...].shape)


@dataclass(frozen=True)
class Sow:
    """``model.sow(nnx.Intermediate, name, 2 * w)``: a structural change (the first sow
    under a name adds an Intermediate attribute)."""

    name: str

    def __call__(self, nnx: Any, model: Any) -> None:
        model.sow(nnx.Intermediate, self.name, model.params.w[...] * 2)


Operation = Scale | Shift | AddNoise | Sow

value_operations: st.SearchStrategy[Operation] = st.one_of(
    st.builds(Scale, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.sampled_from([2.0, -1.0, 0.5])),
    st.builds(Shift, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.integers(-3, 3).map(float)),
    st.builds(AddNoise, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.sampled_from(["params", "default"])),
)
"""An in-place update of a Variable's value: scaling, ``+=``, or noise from an Rngs draw."""


@dataclass(frozen=True)
class Program:
    """A stateful function: operations applied in order to a :func:`stateful_models` model."""

    operations: tuple[Operation, ...]

    def __call__(self, nnx: Any, model: Any) -> None:
        for operation in self.operations:
            operation(nnx, model)


@st.composite
def programs(draw: st.DrawFn, *, structural: bool = False, min_size: int = 1) -> Program:
    """A :class:`Program` of ``min_size`` to 4 operations; sows only with ``structural``."""
    kinds = value_operations
    if structural:
        kinds = st.one_of(value_operations, st.builds(Sow, st.sampled_from(SOWN_NAMES)))
    count = draw(st.integers(min_size, 4), label="number of operations")
    return Program(tuple(draw(kinds, label=f"operation {index}") for index in range(count)))
