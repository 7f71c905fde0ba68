"""Optimizer: an optax gradient transformation whose state lives in Variables.

The optimizer keeps no reference to the model. ``Optimizer(model, tx, wrt=...)``
initialises ``tx`` on the model's ``wrt``-selected Variables; ``update(model,
grads)`` runs ``tx.update`` on plain arrays and writes the new parameter values
and optimizer state back into the Variables in place.
"""

from __future__ import annotations

import functools
import inspect
import typing as tp

import jax
import jax.numpy as jnp
import optax

from .. import filterlib, graphlib, pytreelib
from ..transforms._trees import is_variable
from ..variablelib import Param, Variable

M = tp.TypeVar("M")
F = tp.TypeVar("F", bound=tp.Callable[..., tp.Any])

_GRADS_REQUIRED = (
    "Missing required argument `grads`: since Flax 0.11 Optimizer.update takes both the "
    "model and the gradients, update(model, grads); nnx.ModelAndOptimizer keeps the "
    "older update(grads)."
)
_WRT_REQUIRED = (
    "Missing required argument `wrt`: since Flax 0.11 Optimizer needs the filter of the "
    "Variables it updates, e.g. wrt=nnx.Param; nnx.ModelAndOptimizer keeps the older "
    "default."
)


class OptState(Variable):
    """Any optimizer state"""


class OptArray(OptState):
    """Optimizer state for an array."""


class OptVariable(OptState):
    """Optimizer state for a Variable."""


def _required(name: str, message: str) -> tp.Callable[[F], F]:
    """Makes a call without argument ``name`` raise TypeError(message) instead of
    Python's generic error (the argument became required in flax 0.11)."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                bound = signature.bind_partial(*args, **kwargs)
                if name not in bound.arguments:
                    raise TypeError(message) from None
                raise
            return fn(*bound.args, **bound.kwargs)

        return tp.cast(F, wrapper)

    return decorate


def _to_opt_state(tree: tp.Any) -> tp.Any:
    """Wraps every leaf of an optax state: Variables keep their metadata as OptVariable,
    bare arrays become OptArray. A parameter's ``optimizer_sharding`` metadata, where
    given, becomes its optimizer state's ``out_sharding`` (and so the state's sharding)."""

    def wrap(leaf: tp.Any) -> tp.Any:
        if isinstance(leaf, Variable):
            metadata = dict(leaf.get_metadata())
            if "optimizer_sharding" in metadata:
                metadata["out_sharding"] = metadata.pop("optimizer_sharding")
            return OptVariable(leaf.get_value(), **metadata)
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            return OptArray(leaf)
        return leaf

    return jax.tree.map(wrap, tree, is_leaf=is_variable)


def _plain(tree: tp.Any) -> tp.Any:
    """``tree`` with each Variable replaced by its value."""
    return jax.tree.map(
        lambda leaf: leaf.get_value() if isinstance(leaf, Variable) else leaf, tree, is_leaf=is_variable
    )


def _assign(variables: tp.Any, values: tp.Any) -> None:
    """Writes ``values`` into the Variables of ``variables`` (same structure)."""

    def set_leaf(target: tp.Any, value: tp.Any) -> None:
        if isinstance(target, Variable):
            target.set_value(value)

    jax.tree.map(set_leaf, variables, values, is_leaf=is_variable)


def _check_same_structure(params: tp.Any, grads: tp.Any, wrt: tp.Any) -> None:
    """Raises a ValueError naming the paths where ``grads`` and the parameters differ."""
    params_paths = {jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]}
    grads_paths = {jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(grads)[0]}
    if params_paths != grads_paths:
        missing = ", ".join(sorted(params_paths - grads_paths)) or "none"
        extra = ", ".join(sorted(grads_paths - params_paths)) or "none"
        raise ValueError(
            f"pytree structure error: the grads selected by wrt={wrt!r} do not match "
            f"the model parameters selected by the same filter; missing from grads: "
            f"{missing}; unexpected in grads: {extra}"
        )


class Optimizer(pytreelib.Pytree, tp.Generic[M]):
    """Simple train state for the common case with a single Optax optimizer.

    Attributes:
      step: an ``OptState`` Variable counting the updates applied.
      tx: the Optax gradient transformation.
      opt_state: the Optax state, its arrays held in ``OptState`` Variables.
    """

    @_required("wrt", _WRT_REQUIRED)
    def __init__(
        self,
        model: M,
        tx: optax.GradientTransformation,
        *,
        wrt: filterlib.Filter,
        graph: bool | None = None,
    ):
        """Initialises ``tx`` on the Variables of ``model`` that ``wrt`` selects."""
        self.graph = graph
        self.step = OptState(jnp.array(0, dtype=jnp.uint32))
        self.tx = tx
        params = graphlib.state(model, wrt, graph=graph)
        self.opt_state = pytreelib.data(_to_opt_state(tx.init(params)))
        self.wrt = wrt

    @_required("grads", _GRADS_REQUIRED)
    def update(self, model: M, grads: tp.Any, /, **kwargs: tp.Any) -> tp.Any:
        """Applies ``grads`` to the ``wrt`` Variables of ``model`` and advances the state.

        ``kwargs`` are passed to ``tx.update`` (for ``GradientTransformationExtraArgs``),
        their Variables as plain arrays: ``grad=``, ``value=`` and ``value_fn=`` of
        line-search transforms such as ``optax.lbfgs`` go through as optax expects.
        Returns the updates (a State of arrays shaped like the selected parameters).
        """
        params = graphlib.as_pure(graphlib.state(model, self.wrt, graph=self.graph))
        grads = graphlib.as_pure(graphlib.state(grads, self.wrt, graph=self.graph))
        _check_same_structure(params, grads, self.wrt)
        opt_state = graphlib.as_pure(self.opt_state)
        extra_args = {name: _plain(value) for name, value in kwargs.items()}
        updates, new_opt_state = self.tx.update(grads, opt_state, params, **extra_args)
        graphlib.update(model, optax.apply_updates(params, updates))  # plain array attributes too, as flax
        _assign(self.opt_state, new_opt_state)
        self.step[...] += 1
        return updates


class ModelAndOptimizer(Optimizer[M]):
    """An Optimizer that also holds its model (the pre-0.11 interface).

    Deprecated in flax; use :class:`Optimizer` instead.
    """

    def __init__(self, model: M, tx: optax.GradientTransformation, *, wrt: filterlib.Filter = Param):
        super().__init__(model, tx, wrt=wrt)
        self.model = model

    def update(self, grads: tp.Any, /, **kwargs: tp.Any) -> tp.Any:  # type: ignore[override]
        """Applies ``grads`` to the held model."""
        return super().update(self.model, grads, **kwargs)
