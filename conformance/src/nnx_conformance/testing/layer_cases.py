"""Comparing one layer built and run by two implementations: the yardstick and a candidate.

A :class:`Case` builds a layer with ``build(nnx, rngs)`` and, if it has an input, runs
it with ``call(nnx, layer, x)``. :func:`case_difference` builds it with both
implementations from the same seed and checks, through :func:`describe.difference`, that

- the states agree exactly: same paths, Variable types and metadata, shapes, dtypes and
  values (so the rng streams and the keys each layer draws match), and
- each call gives the same described outputs within the case's tolerance (none by
  default: bit for bit), emits warnings of the same categories, leaves the states equal
  again, or raises flax's exception class (or a subclass) in both, and
- with ``grad``, the gradients of a scalar loss of the outputs with respect to the
  layer's parameters and its input are equal bit for bit, and so are the states after.

Used by the differential tests of the suite, through ``assertions.assert_agrees``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .describe import ArrayEntry, array_entry, describe, difference
from .outcomes import Side, error_line, recursion_difference

if TYPE_CHECKING:
    from nnx_conformance.testing.strategies import LayerArgs

Build = Callable[[Any, Any], Any]


class Leaf(NamedTuple):
    """One Variable of a flat state: its path, its type with its metadata, its value."""

    path: tuple[str, ...]
    variable: str
    value: ArrayEntry


@dataclasses.dataclass
class Case:
    """A layer built by ``build(nnx, rngs)`` and, if ``x`` is given, run by ``call(nnx, layer, x)``.

    Outputs may differ by ``tol`` plus ``ulps`` units of rounding of their dtype, scaled
    by the magnitude of the yardstick's output (at least 1). With ``allow_errors`` (cases
    written to probe errors), both sides raising flax's exception type is agreement;
    without it, a case where the yardstick raises compares nothing and fails. With
    ``grad``, gradients through the call are compared after the calls.
    """

    name: str
    build: Build
    x: Any = None
    call: Callable[[Any, Any, Any], Any] = lambda nnx, layer, x: layer(x)
    calls: int = 1
    tol: float = 0.0
    ulps: float = 0.0
    rngs: Callable[[Any], Any] = lambda nnx: nnx.Rngs(0, dropout=1)
    allow_errors: bool = True
    grad: bool = False

    def allowance(self, expected: np.ndarray) -> float:
        """How far an output array may be from the yardstick's ``expected``."""
        allowed = self.tol
        if self.ulps and jnp.issubdtype(expected.dtype, jnp.floating) and expected.size:
            scale = max(1.0, float(np.max(np.abs(expected.astype(np.float64)))))
            allowed += self.ulps * float(jnp.finfo(expected.dtype).eps) * scale
        return allowed


def flat_state(nnx: Any, module: Any) -> list[Leaf]:
    """A :class:`Leaf` for every Variable of ``module``'s state."""
    return flat_leaves(nnx, nnx.state(module))


def flat_leaves(nnx: Any, state: Any) -> list[Leaf]:
    """A :class:`Leaf` for every Variable of the State ``state``."""
    leaves = []
    for path, variable in nnx.to_flat_state(state):
        value = variable.get_value() if hasattr(variable, "get_value") else variable
        value = jnp.asarray(value)  # a sown Intermediate holds a tuple
        leaves.append(Leaf(tuple(str(p) for p in path), _variable(variable), array_entry(value)))
    return leaves


def _variable(variable: Any) -> str:
    metadata = variable.get_metadata() if hasattr(variable, "get_metadata") else {}
    return f"{type(variable).__name__}{sorted((k, repr(v)) for k, v in metadata.items())}"


def state_difference(expected: list[Leaf], actual: list[Leaf]) -> str | None:
    """What first differs between two flat states (yardstick first), or None."""
    return difference(expected, actual, "the state")


def _loss(nnx: Any, case: Case, layer: Any, x: Any) -> Any:
    """The scalar whose gradients a case compares: the sum of squares of its float outputs."""
    outputs = [leaf for leaf in jax.tree.leaves(case.call(nnx, layer, x)) if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return sum(jnp.sum(jnp.square(leaf.astype(jnp.float32))) for leaf in outputs)


class Gradients(NamedTuple):
    """The gradients of a case's loss: by the layer's Params, and by its input (described;
    None where the input is not float)."""

    by_params: list[Leaf]
    by_input: Any


def gradients(nnx: Any, case: Case, layer: Any) -> Gradients:
    """``nnx.grad`` of the case's loss: by the layer's Params (flat) and, if it is float, by the input
    (described). Graph mode with graph updates, whatever the global mode: its gradients are a State
    of the Params."""
    x = jnp.asarray(case.x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        by_params = nnx.grad(lambda m: _loss(nnx, case, m, x), graph=True, graph_updates=True)(layer)
        return Gradients(flat_leaves(nnx, by_params), None)
    by_params, by_input = nnx.grad(lambda m, x: _loss(nnx, case, m, x), argnums=(0, 1), graph=True, graph_updates=True)(
        layer, x
    )
    return Gradients(flat_leaves(nnx, by_params), describe(nnx, by_input))


def case_difference(case: Case, yardstick: Side, candidate: Side) -> str | None:
    """How the candidate departs from the yardstick on ``case``, or None where it agrees."""
    built = [side.record(lambda n: case.build(n, case.rngs(n))) for side in (yardstick, candidate)]
    if built[0].error or built[1].error:
        return _both_raise(case, built[0].error, built[1].error, "construction")
    a, b = built[0].result, built[1].result
    if built[0].categories() != built[1].categories():
        return f"construction warns {built[0].categories()} / {built[1].categories()}"
    if found := recursion_difference(*built):
        return f"in construction, {found}"
    found = _states_differ(yardstick, candidate, a, b)
    if found:
        return f"after construction, {found}"
    for step in range(case.calls if case.x is not None else 0):
        ya, yb = yardstick.record(case.call, a, case.x), candidate.record(case.call, b, case.x)
        if ya.error or yb.error:
            return _both_raise(case, ya.error, yb.error, f"call {step + 1}")
        if ya.categories() != yb.categories():
            return f"call {step + 1} warns {ya.categories()} / {yb.categories()}"
        if found := recursion_difference(ya, yb):
            return f"in call {step + 1}, {found}"
        outputs = yardstick.run(describe, ya.result, catch=False), candidate.run(describe, yb.result, catch=False)
        found = difference(*outputs, "the output", allow=case.allowance) or _states_differ(yardstick, candidate, a, b)
        if found:
            return f"after call {step + 1}, {found}"
    if case.grad and case.x is not None:
        return _gradients_differ(case, yardstick, candidate, a, b)
    return None


def _states_differ(yardstick: Side, candidate: Side, a: Any, b: Any) -> str | None:
    return state_difference(yardstick.run(flat_state, a, catch=False), candidate.run(flat_state, b, catch=False))


def _gradients_differ(case: Case, yardstick: Side, candidate: Side, a: Any, b: Any) -> str | None:
    """How the gradients of ``case`` through the layers ``a`` (yardstick) and ``b`` differ, or None."""
    ga, gb = yardstick.record(gradients, case, a), candidate.record(gradients, case, b)
    if ga.error or gb.error:
        return _both_raise(case, ga.error, gb.error, "gradient")
    found = (
        recursion_difference(ga, gb)
        or difference(ga.result.by_params, gb.result.by_params, "the gradients by the parameters")
        or difference(ga.result.by_input, gb.result.by_input, "the gradient by the input")
        or _states_differ(yardstick, candidate, a, b)
    )
    return f"after the gradient, {found}" if found else None


def _both_raise(case: Case, a: Exception | None, b: Exception | None, stage: str) -> str | None:
    """The verdict when the yardstick (``a``) or the candidate (``b``) raised at ``stage``:
    agreement where errors are allowed and the candidate raises flax's class or a subclass."""
    agree = a is not None and isinstance(b, type(a))
    return None if case.allow_errors and agree else f"{stage} raises {error_line(a)} / {error_line(b)}"


ROUNDING_ULPS = 0.0
"""Rounding units (of the output dtype, times its magnitude) that outputs of the suite's
cases may differ by: none, flax is deterministic on CPU and the reference computes in
flax's order of operations."""


def layer_case(
    layer: str, drawn: LayerArgs, seed: int, x: Any = None, build: Build | None = None, **fields: Any
) -> Case:
    """The case of ``nnx.<layer>`` built from ``drawn`` (or by ``build``, which uses it) with
    ``Rngs(seed)``, called on ``x`` with the drawn call keywords (unless ``call`` is given),
    outputs compared within :data:`ROUNDING_ULPS`, and gradients through the call compared
    bit for bit."""
    fields.setdefault("ulps", ROUNDING_ULPS)
    fields.setdefault("allow_errors", False)  # a drawn layer must run: an error compares nothing
    fields.setdefault("rngs", lambda nnx: nnx.Rngs(seed))
    fields.setdefault("grad", x is not None)
    fields.setdefault("call", lambda nnx, module, x: drawn.call(module, x))

    def by_name(nnx: Any, rngs: Any) -> Any:
        return drawn.build(nnx, layer, rngs)

    called = f" called with {drawn.call_kwargs}" if drawn.call_kwargs else ""
    return Case(f"{layer}{drawn.args} {drawn.kwargs}{called}", build or by_name, x, **fields)
