"""Callables that tests pass to a layer in place of its defaults (``promote_dtype``,
``dot_general``, ``conv_general_dilated``, ``einsum_op``, ...): plain JAX, so one object
serves both implementations, and each records how the layer called it, so that the call
protocol is compared as well as the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same, expected_got
from nnx_conformance.testing.outcomes import Scenario, error_line

NORMAL = jax.nn.initializers.normal(0.5)
"""An initializer away from every layer's default: normal with standard deviation 0.5."""

HIGHEST = jax.lax.Precision.HIGHEST
"""A precision away from every layer's default."""

IN_GRAPH_MODE = pytest.mark.graph_mode("graph")
"""Keyword cases that run in graph mode whatever ``--graph-mode`` says: they were drawn
against flax in graph mode (the transforms' keywords, graph utilities, filters, training,
tabulate), and their tree-mode forms are not specified."""


class ArrayShape(NamedTuple):
    """An argument array as a call record keeps it: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: str


def _shape_of(value: Any) -> ArrayShape | None:
    return None if value is None else ArrayShape(tuple(value.shape), str(value.dtype))


class PromotionCall(NamedTuple):
    """One call of a ``promote_dtype`` function: the arrays it got, ``dtype`` and ``inexact``."""

    arrays: tuple[ArrayShape | None, ...]
    dtype: str
    inexact: bool


@dataclass
class Promotion:
    """A ``promote_dtype`` that casts every inexact array to ``to`` and records its calls."""

    to: Any = jnp.bfloat16
    calls: list[PromotionCall] = field(default_factory=list)

    def __call__(self, arrays: tuple[Any, ...], dtype: Any = None, inexact: bool = True) -> tuple[Any, ...]:
        self.calls.append(PromotionCall(tuple(map(_shape_of, arrays)), str(dtype), inexact))
        return tuple(
            a if a is None or not jnp.issubdtype(a.dtype, jnp.inexact) else jnp.asarray(a, self.to) for a in arrays
        )


class OperationCall(NamedTuple):
    """One call of a replaced operation: its array arguments, other positional ones, and keyword names."""

    arrays: tuple[ArrayShape, ...]
    others: tuple[str, ...]
    keywords: tuple[str, ...]


@dataclass
class ScaledOperation:
    """A replacement for ``operation`` (``jax.lax.dot_general``, ``jnp.einsum``, ...) that
    returns twice its result, so that a layer's output shows it was used, and records its calls."""

    operation: Callable[..., Any]
    calls: list[OperationCall] = field(default_factory=list)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays = tuple(_shape_of(a) for a in args if hasattr(a, "shape"))
        others = tuple(repr(a) for a in args if not hasattr(a, "shape"))
        self.calls.append(OperationCall(arrays, others, tuple(sorted(kwargs))))
        return 2 * self.operation(*args, **kwargs)


def scaled_dot_general() -> ScaledOperation:
    return ScaledOperation(jax.lax.dot_general)


def scaled_conv() -> ScaledOperation:
    return ScaledOperation(jax.lax.conv_general_dilated)


def scaled_einsum() -> ScaledOperation:
    return ScaledOperation(jnp.einsum)


class ScaledDotGeneralClass:
    """A ``dot_general_cls``: each instance is a doubling ``dot_general``; every instance's
    calls are recorded in the class-level list of the subclass :func:`dot_general_class` made."""

    calls: list[OperationCall]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        operation = ScaledOperation(jax.lax.dot_general, self.calls)
        return operation(*args, **kwargs)


def dot_general_class() -> type[ScaledDotGeneralClass]:
    """A fresh ``dot_general_cls`` with a call record of its own."""
    return type("RecordedDotGeneral", (ScaledDotGeneralClass,), {"calls": []})


def _records(options: dict[str, Any]) -> dict[str, list[Any]]:
    """The calls that the recording callables among ``options`` saw, by keyword."""
    return {
        name: value.calls
        for name, value in options.items()
        if isinstance(value, (Promotion, ScaledOperation))
        or (isinstance(value, type) and issubclass(value, ScaledDotGeneralClass))
    }


Options = Callable[[Any], dict[str, Any]]
"""The keywords a case passes a layer, made afresh for each implementation (given its nnx
module, for Variable types), so that each side's recording callables start empty."""


@dataclass(frozen=True)
class OptionCase:
    """``nnx.<layer>(*args, **options(nnx), rngs=Rngs(seed))`` run on an input of ``input_shape``
    by ``call`` (default: the layer itself)."""

    name: str
    layer: str
    args: tuple[Any, ...]
    options: Options
    input_shape: tuple[int, ...]
    call: Callable[[Any, Any, Any], Any] | None = None

    def scenario(self, seed: int, x: Any) -> Callable[[Any], Any]:
        """What the case compares: the output, the state after it, the gradients of a scalar
        loss by the parameters, and the calls the given callables recorded."""

        def run(nnx: Any) -> Any:
            options = self.options(nnx)
            layer = getattr(nnx, self.layer)(*self.args, **options, rngs=nnx.Rngs(seed))
            call = self.call or (lambda nnx, layer, x: layer(x))
            y = call(nnx, layer, x)

            def loss(layer: Any) -> Any:
                leaves = [a for a in jax.tree.leaves(call(nnx, layer, x)) if jnp.issubdtype(a.dtype, jnp.inexact)]
                return sum(jnp.sum(jnp.square(a.astype(jnp.float32))) for a in leaves)

            grads = nnx.grad(loss)(layer)
            return y, nnx.state(layer), grads, _records(options)

        return run


def assert_runs_as_in_flax(yardstick: Any, nnx: Any, scenario: Scenario) -> None:
    """``assert_same``, for a scenario that flax.nnx runs without error: both raising the
    same exception would say nothing of the keywords a case passes."""
    __tracebackhide__ = True
    expected = assert_same(yardstick, nnx, scenario)
    assert expected.error is None, expected_got("the scenario on flax.nnx", "no error", error_line(expected.error))
