"""TrainState: a functional (immutable pytree) train state over a split model."""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
import optax

from .. import graphlib

M = tp.TypeVar("M")
TS = tp.TypeVar("TS", bound="TrainState")


class _ApplyCaller:
    """``state.apply('params')(...)``: merges the model, calls a method on it (an
    attribute path like ``.encoder.__call__`` is followed first) and returns
    ``(output, (graphdef, state))`` with the model split again afterwards."""

    def __init__(self, graphdef: tp.Any, states: tuple[tp.Any, ...], path: tuple[str, ...] = ()):
        self._graphdef = graphdef
        self._states = states
        self._path = path

    def __getattr__(self, name: str) -> _ApplyCaller:
        if name.startswith("__") and name.endswith("__") and name != "__call__":
            raise AttributeError(name)
        return _ApplyCaller(self._graphdef, self._states, (*self._path, name))

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tuple[tp.Any, tuple[tp.Any, tp.Any]]:
        model = graphlib.merge(self._graphdef, *self._states)
        target = model
        for name in self._path:
            target = getattr(target, name)
        out = target(*args, **kwargs)
        graphdef, state = graphlib.split(model)
        return out, (graphdef, state)


@dataclasses.dataclass(frozen=True)
class TrainState(tp.Generic[M]):
    """TrainState(graphdef, params, opt_state, step, tx): a model's graphdef and
    parameters with an Optax state, updated functionally by ``apply_gradients``."""

    graphdef: tp.Any
    params: tp.Any
    opt_state: tp.Any
    step: jax.Array
    tx: optax.GradientTransformation = dataclasses.field(metadata={"static": True})

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
            step=step,
            tx=tx,
            **kwargs,
        )

    def apply(self, state: tp.Any, *states: tp.Any) -> _ApplyCaller:
        """A caller for the model merged from the named fields (e.g. ``'params'``)
        or the given States."""
        resolved = tuple(getattr(self, s) if isinstance(s, str) else s for s in (state, *states))
        return _ApplyCaller(self.graphdef, resolved)

    def apply_gradients(self: TS, grads: tp.Any, **kwargs: tp.Any) -> TS:
        """A new TrainState with ``grads`` applied through ``tx`` and ``step + 1``."""
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = optax.apply_updates(self.params, updates)
        return self.replace(params=params, opt_state=opt_state, step=self.step + 1, **kwargs)

    def replace(self: TS, **updates: tp.Any) -> TS:
        """Returns a new object replacing the specified fields with new values."""
        return dataclasses.replace(self, **updates)


jax.tree_util.register_dataclass(
    TrainState,
    data_fields=["graphdef", "params", "opt_state", "step"],
    meta_fields=["tx"],
)
