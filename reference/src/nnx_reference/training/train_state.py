"""TrainState: a functional (immutable pytree) train state over a split model."""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
import optax

from .. import graphlib
from ..statelib import State

M = tp.TypeVar("M")
TS = tp.TypeVar("TS", bound="TrainState")


@dataclasses.dataclass(frozen=True)
class TrainState(tp.Generic[M]):
    """TrainState(graphdef, params, opt_state, step, tx): a model's graphdef and
    parameters with an Optax state, updated functionally by ``apply_gradients``."""

    graphdef: tp.Any
    params: tp.Any
    opt_state: tp.Any
    step: jax.Array
    tx: optax.GradientTransformation = dataclasses.field(metadata={"static": True})

    def __init_subclass__(cls, **kwargs: tp.Any) -> None:
        """A subclass is a frozen dataclass pytree too: its annotated fields become
        constructor (and ``create``) arguments, data unless marked ``static``."""
        super().__init_subclass__(**kwargs)
        _register(dataclasses.dataclass(frozen=True)(cls))

    @classmethod
    def create(
        cls,
        graphdef: tp.Any,
        *,
        params: tp.Any,
        tx: optax.GradientTransformation,
        step: int = 0,
        **kwargs: tp.Any,
    ) -> TrainState[M]:
        """A TrainState at ``step`` with ``tx`` initialised on ``params``."""
        return cls(
            graphdef=graphdef,
            params=params,
            opt_state=tx.init(params),
            step=jax.numpy.asarray(step),
            tx=tx,
            **kwargs,
        )

    def apply(self, state: tp.Any, *states: tp.Any) -> graphlib.ApplyCaller:
        """A caller for the model merged from the named fields (e.g. ``'params'``)
        or the given States."""
        return graphlib.ApplyCaller(self.graphdef, tuple(self._named_state(s) for s in (state, *states)))

    def _named_state(self, state: tp.Any) -> tp.Any:
        """``state``, or the State held by the field it names (TypeError for another field)."""
        if not isinstance(state, str):
            return state
        named = getattr(self, state)
        if not isinstance(named, State):
            raise TypeError(f"Expected {type(self).__name__}.{state} to be a State, got {type(named)}")
        return named

    def apply_gradients(self: TS, grads: tp.Any, **kwargs: tp.Any) -> TS:
        """A new TrainState with ``grads`` applied through ``tx`` and ``step + 1``."""
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = optax.apply_updates(self.params, updates)
        return self.replace(params=params, opt_state=opt_state, step=self.step + 1, **kwargs)

    def replace(self: TS, **updates: tp.Any) -> TS:
        """Returns a new object replacing the specified fields with new values."""
        return dataclasses.replace(self, **updates)


def _register(cls: type) -> None:
    """Registers the dataclass ``cls`` as a pytree: fields marked ``static`` (or
    ``pytree_node=False``, as ``flax.struct.field`` marks them) are its treedef's, the
    others its children."""
    fields = dataclasses.fields(cls)
    static = {f.name for f in fields if f.metadata.get("static") or f.metadata.get("pytree_node") is False}
    jax.tree_util.register_dataclass(
        cls,
        data_fields=[f.name for f in fields if f.name not in static],
        meta_fields=[f.name for f in fields if f.name in static],
    )


_register(TrainState)
