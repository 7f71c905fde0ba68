"""Comparing one layer built and run by two implementations: the yardstick and a candidate.

A :class:`Case` builds a layer with ``build(nnx, rngs)`` and, if it has an input, runs
it with ``call(nnx, layer, x)``. :func:`run_case` builds it with both implementations
from the same seed and checks that

- the states agree exactly: same paths, Variable types and metadata, shapes, dtypes and
  values (so the rng streams and the keys each layer draws match), and
- each call gives the same outputs within the case's tolerance (none by default: bit
  for bit), emits warnings of the same categories, leaves the states equal again, or
  raises flax's exception class (or a subclass) in both, and
- with ``grad``, the gradients of a scalar loss of the outputs with respect to the
  layer's parameters and its input are equal bit for bit, and so are the states after.

Used by the differential tests of the suite, through ``assertions.assert_agrees``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ContextManager

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from nnx_conformance.testing.strategies import LayerArgs

Build = Callable[[Any, Any], Any]
Leaf = tuple[tuple[str, ...], str, Any]
"""One Variable of a flat state: (path, "Type[metadata]", value)."""


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


@dataclasses.dataclass(frozen=True)
class Side:
    """One implementation in a comparison: its nnx module and the context its code must run in."""

    nnx: Any
    context: Callable[[], ContextManager[Any]] = contextlib.nullcontext

    def run(self, fn: Callable[..., Any], *args: Any, catch: bool = True) -> Any:
        """``fn(nnx, *args)`` in this side's context; with ``catch``, an exception is returned."""
        return self.run_recording(fn, *args, catch=catch)[0]

    def run_recording(self, fn: Callable[..., Any], *args: Any, catch: bool = True) -> tuple[Any, list[str]]:
        """:meth:`run`, with the categories of the warnings it emitted."""
        with self.context(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcome = fn(self.nnx, *args)
            except Exception as error:  # noqa: BLE001 - the exception type is what is compared
                if not catch:
                    raise
                outcome = error
        return outcome, sorted({w.category.__name__ for w in caught})


def flat_state(nnx: Any, module: Any) -> list[Leaf]:
    """(path, "Type[metadata]", value) for every Variable of ``module``'s state; keys as key data."""
    return flat_leaves(nnx, nnx.state(module))


def flat_leaves(nnx: Any, state: Any) -> list[Leaf]:
    """(path, "Type[metadata]", value) for every Variable of the State ``state``."""
    leaves = []
    for path, variable in nnx.to_flat_state(state):
        value = variable.get_value() if hasattr(variable, "get_value") else variable
        value = jnp.asarray(value)  # a sown Intermediate holds a tuple
        if jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
            value = jax.random.key_data(value)
        leaves.append((tuple(str(p) for p in path), _describe(variable), np.asarray(value)))
    return leaves


def _describe(variable: Any) -> str:
    metadata = variable.get_metadata() if hasattr(variable, "get_metadata") else {}
    return f"{type(variable).__name__}{sorted((k, repr(v)) for k, v in metadata.items())}"


def _max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """In NumPy, not JAX: every new shape would compile a JAX computation."""
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def state_difference(expected: list[Leaf], actual: list[Leaf]) -> str | None:
    """What first differs between two flat states (yardstick first), or None."""
    described_e = [(p, t) for p, t, _ in expected]
    described_a = [(p, t) for p, t, _ in actual]
    if described_e != described_a:
        return f"paths/types: expected {described_e}, got {described_a}"
    for (path, _, e), (_, _, a) in zip(expected, actual):
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"{path}: expected {e.dtype}{list(e.shape)}, got {a.dtype}{list(a.shape)}"
        if not np.array_equal(e, a):
            return f"{path} ({e.dtype}{list(e.shape)}): values differ, max abs diff {_max_abs_diff(e, a):.3g}"
    return None


def output_difference(expected: Any, actual: Any, tol: float, ulps: float) -> tuple[str | None, float]:
    """What differs between two outputs (yardstick first) beyond the tolerance, and the max abs diff."""
    leaves_e, tree_e = jax.tree.flatten(expected)
    leaves_a, tree_a = jax.tree.flatten(actual)
    if tree_e != tree_a:
        return f"output structure: expected {tree_e}, got {tree_a}", float("nan")
    worst = 0.0
    for index, (e, a) in enumerate(zip(leaves_e, leaves_a)):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"output leaf {index}: expected {e.dtype}{list(e.shape)}, got {a.dtype}{list(a.shape)}", worst
        diff = _max_abs_diff(e, a)
        worst = max(worst, diff)
        allowed = tol
        if ulps and jnp.issubdtype(e.dtype, jnp.floating) and e.size:
            scale = max(1.0, float(np.max(np.abs(e.astype(np.float64)))))
            allowed += ulps * float(jnp.finfo(e.dtype).eps) * scale
        if not diff <= allowed:
            return f"output leaf {index} ({e.dtype}{list(e.shape)}): max abs diff {diff:.3g} > {allowed:.3g}", worst
    return None, worst


def _loss(nnx: Any, case: Case, layer: Any, x: Any) -> Any:
    """The scalar whose gradients a case compares: the sum of squares of its float outputs."""
    outputs = [leaf for leaf in jax.tree.leaves(case.call(nnx, layer, x)) if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return sum(jnp.sum(jnp.square(leaf.astype(jnp.float32))) for leaf in outputs)


def gradients(nnx: Any, case: Case, layer: Any) -> tuple[list[Leaf], Any]:
    """``nnx.grad`` of the case's loss: by the layer's Params (flat) and, if it is float, by the input.
    Graph mode with graph updates, whatever the global mode: its gradients are a State of the Params."""
    x = jnp.asarray(case.x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return flat_leaves(nnx, nnx.grad(lambda m: _loss(nnx, case, m, x), graph=True, graph_updates=True)(layer)), None
    by_params, by_input = nnx.grad(lambda m, x: _loss(nnx, case, m, x), argnums=(0, 1), graph=True, graph_updates=True)(layer, x)
    return flat_leaves(nnx, by_params), by_input


def run_case(case: Case, yardstick: Side, candidate: Side) -> tuple[bool, str]:
    """Whether the candidate agrees with the yardstick on ``case``, and a note saying how."""
    (a, warned_a), (b, warned_b) = (side.run_recording(lambda n: case.build(n, case.rngs(n))) for side in (yardstick, candidate))
    if isinstance(a, Exception) or isinstance(b, Exception):
        return _both_raise(case, a, b, "construction")
    if warned_a != warned_b:
        return False, f"construction warns {warned_a} / {warned_b}"
    difference = _states_differ(yardstick, candidate, a, b)
    if difference:
        return False, f"state after construction differs: {difference}"
    notes = []
    for step in range(case.calls if case.x is not None else 0):
        (ya, warned_a), (yb, warned_b) = yardstick.run_recording(case.call, a, case.x), candidate.run_recording(case.call, b, case.x)
        if isinstance(ya, Exception) or isinstance(yb, Exception):
            return _both_raise(case, ya, yb, f"call {step + 1}")
        if warned_a != warned_b:
            return False, f"call {step + 1} warns {warned_a} / {warned_b}"
        difference, worst = output_difference(ya, yb, case.tol, case.ulps)
        notes.append(f"max |diff| {worst:.3g}")
        if difference:
            return False, f"call {step + 1}: {difference}"
        difference = _states_differ(yardstick, candidate, a, b)
        if difference:
            return False, f"state after call {step + 1} differs: {difference}"
    if case.grad and case.x is not None:
        return _gradients_agree(case, yardstick, candidate, a, b, notes)
    return True, "; ".join(notes)


def _states_differ(yardstick: Side, candidate: Side, a: Any, b: Any) -> str | None:
    return state_difference(yardstick.run(flat_state, a, catch=False), candidate.run(flat_state, b, catch=False))


def _gradients_agree(case: Case, yardstick: Side, candidate: Side, a: Any, b: Any, notes: list[str]) -> tuple[bool, str]:
    """The verdict on the gradients of ``case`` through the layers ``a`` (yardstick) and ``b``."""
    ga, gb = yardstick.run(gradients, case, a), candidate.run(gradients, case, b)
    if isinstance(ga, Exception) or isinstance(gb, Exception):
        return _both_raise(case, ga, gb, "gradient")
    difference = state_difference(ga[0], gb[0])
    if difference:
        return False, f"gradients by the parameters differ: {difference}"
    difference, worst = output_difference(ga[1], gb[1], 0.0, 0.0)
    if difference:
        return False, f"gradient by the input differs: {difference}"
    difference = _states_differ(yardstick, candidate, a, b)
    if difference:
        return False, f"state after the gradient differs: {difference}"
    return True, "; ".join([*notes, "gradients equal"])


def _both_raise(case: Case, a: Any, b: Any, stage: str) -> tuple[bool, str]:
    """The verdict when the yardstick (``a``) or the candidate (``b``) raised at ``stage``:
    agreement where errors are allowed and the candidate raises flax's class or a subclass."""
    note = f"{stage} raises {_name(a)} / {_name(b)}"
    agree = isinstance(a, Exception) and isinstance(b, type(a))
    return case.allow_errors and agree, note


def _name(outcome: Any) -> str:
    if not isinstance(outcome, Exception):
        return "nothing"
    message = str(outcome).splitlines()[0][:120] if str(outcome) else ""
    return f"{type(outcome).__name__}({message!r})"


ROUNDING_ULPS = 0.0
"""Rounding units (of the output dtype, times its magnitude) that outputs of the suite's
cases may differ by: none, flax is deterministic on CPU and the reference computes in
flax's order of operations."""


def layer_case(
    layer: str, drawn: LayerArgs, seed: int, x: Any = None, build: Build | None = None, **fields: Any
) -> Case:
    """The case of ``nnx.<layer>`` built from ``drawn`` (or by ``build``, which uses it) with
    ``Rngs(seed)``, run on ``x``, outputs compared within :data:`ROUNDING_ULPS`, and
    gradients through the call compared bit for bit."""
    fields.setdefault("ulps", ROUNDING_ULPS)
    fields.setdefault("allow_errors", False)  # a drawn layer must run: an error compares nothing
    fields.setdefault("rngs", lambda nnx: nnx.Rngs(seed))
    fields.setdefault("grad", x is not None)

    def by_name(nnx: Any, rngs: Any) -> Any:
        return drawn.build(nnx, layer, rngs)

    return Case(f"{layer}{drawn.args} {drawn.kwargs}", build or by_name, x, **fields)
