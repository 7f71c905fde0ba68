"""EMA: an exponential moving average of a model's Variables."""

from __future__ import annotations

import typing as tp

import jax

from .. import filterlib, graphlib, pytreelib
from ..transforms._trees import is_variable
from ..variablelib import Variable

A = tp.TypeVar("A")


class EMA(pytreelib.Pytree):
    """Exponential Moving Average (EMA) of parameters.

    Holds copies of the Variables that ``only`` selects in ``params`` and moves
    them towards new values on each :meth:`update`:
    ``ema = decay * ema + (1 - decay) * new``.

    Attributes:
      decay: the decay rate of the moving average.
      filter: the filter selecting the tracked Variables.
      params: a State of Variables holding the current averages.
    """

    def __init__(
        self,
        params: tp.Any,
        decay: float,
        *,
        only: filterlib.Filter = ...,
        graph: bool | None = None,
    ):
        """Starts the average at the current values of ``params``' Variables."""
        self.graph = graph
        self.decay = decay
        self.filter = only
        tracked = graphlib.state(params, only, graph=graph)
        for path, leaf in jax.tree_util.tree_flatten_with_path(tracked, is_leaf=is_variable)[0]:
            if not isinstance(leaf, Variable):
                raise TypeError(
                    f"EMA only supports Variable leaves, got {type(leaf).__name__} at path "
                    f"'{jax.tree_util.keystr(path)}'. Use the `only` filter to select "
                    "Variable leaves."
                )
        self.params = pytreelib.data(jax.tree.map(lambda v: v.replace(v.get_value()), tracked, is_leaf=is_variable))

    def update(self, updates: tp.Any) -> None:
        """Moves every average towards the matching Variable of ``updates`` (a model
        or state with the structure of the ``params`` given at construction)."""
        new = graphlib.state(updates, self.filter, graph=self.graph)
        decay = self.decay

        def blend(average: Variable, value: Variable) -> None:
            average[...] = decay * average[...] + (1 - decay) * value[...]

        jax.tree.map(blend, self.params, new, is_leaf=is_variable)

    def apply_to(self, model: A) -> A:
        """Returns a view of the model using the EMA parameters.

        The result has ``model``'s structure; its tracked Variables are the EMA's
        own (so it follows later updates) and the rest are ``model``'s.
        """
        graphdef, _, rest = graphlib.split(model, self.filter, ..., graph=self.graph)
        return graphlib.merge(graphdef, self.params, rest)
