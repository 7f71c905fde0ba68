"""Parity of the forms of ``nnx.scan``'s ``in_axes`` and ``out_axes`` with flax.nnx: a
``StateAxes`` scanning some Variables along another axis and carrying or broadcasting
the rest, a Module scanned along another axis, a broadcast array, a scan without a
carry; and what flax refuses: a nested ``Carry``, a ``Carry`` on one side only, a
``StateAxes`` on an array, an axis that is no axis, an integer axis on a non-array, an
output ``StateAxes`` that broadcasts or carries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing import graph_strategies as gs
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

MODES = gs.MODE_KEYWORDS
UPDATES = {"graph mode with graph updates": MODES["graph mode with graph updates"]}
"""StateAxes need graph mode with graph updates."""


def _columns(nnx: Any) -> Any:
    """A Module whose Param has 4 columns to scan over (axis 1) and a counter."""
    return nnx.Dict(w=nnx.Param(jnp.arange(12.0).reshape(3, 4)), count=nnx.BatchStat(jnp.array(0)))


def _add_column(model: Any, total: Any) -> Any:
    model["count"][...] += 1
    return total + model["w"][...]


Scenario = Callable[[Any, dict[str, bool]], Any]


def _state_axes_carry(nnx: Any, mode: dict[str, bool]) -> Any:
    model = _columns(nnx)
    axes = nnx.StateAxes({nnx.Param: 1, ...: nnx.Carry})
    total = nnx.scan(_add_column, in_axes=(axes, nnx.Carry), out_axes=nnx.Carry, **mode)(model, jnp.zeros(3))
    return total, model


def _state_axes_unscanned(nnx: Any, mode: dict[str, bool]) -> Any:
    model = nnx.Dict(w=nnx.Param(jnp.arange(3.0)), total=nnx.BatchStat(jnp.zeros(3)))
    axes = nnx.StateAxes({nnx.Param: None, ...: nnx.Carry})

    def step(model: Any, x: Any) -> Any:
        model["total"][...] += model["w"][...] * x
        return x * 2

    ys = nnx.scan(step, in_axes=(axes, 0), out_axes=0, **mode)(model, jnp.arange(6.0).reshape(2, 3))
    return ys, model


def _state_axes_broadcast(nnx: Any, mode: dict[str, bool]) -> Any:
    model = nnx.Dict(w=nnx.Param(jnp.arange(3.0)), b=nnx.BatchStat(jnp.arange(6.0).reshape(2, 3)))
    axes = nnx.StateAxes({nnx.Param: None, ...: 0})

    def step(total: Any, model: Any) -> Any:
        return total + model["w"][...] * model["b"][...], model["b"][...] * 2

    total, ys = nnx.scan(step, in_axes=(nnx.Carry, axes), out_axes=(nnx.Carry, 1), **mode)(jnp.zeros(3), model)
    return total, ys, model


def _state_axes_out(nnx: Any, mode: dict[str, bool]) -> Any:
    def make(total: Any, x: Any) -> Any:
        return total + x, nnx.Dict(w=nnx.Param(x * 2), n=nnx.BatchStat(x.sum()))

    axes = nnx.StateAxes({nnx.Param: 1, ...: 0})
    total, made = nnx.scan(make, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, axes), **mode)(
        jnp.zeros(3), jnp.arange(6.0).reshape(2, 3)
    )
    return total, made


def _module_along_axis_1(nnx: Any, mode: dict[str, bool]) -> Any:
    model = nnx.Dict(w=nnx.Param(jnp.arange(12.0).reshape(3, 4)))

    def step(total: Any, model: Any) -> Any:
        return total + model["w"][...], model["w"][...] + 1

    total, ys = nnx.scan(step, in_axes=(nnx.Carry, 1), out_axes=(nnx.Carry, 1), **mode)(jnp.zeros(3), model)
    return total, ys, model


def _broadcast_array(nnx: Any, mode: dict[str, bool]) -> Any:
    def step(total: Any, scale: Any, x: Any) -> Any:
        return total + scale * x, scale * x

    return nnx.scan(step, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0), **mode)(
        jnp.zeros(3), jnp.arange(3.0), jnp.arange(6.0).reshape(2, 3)
    )


def _broadcast_module(nnx: Any, mode: dict[str, bool]) -> Any:
    model = nnx.Dict(w=nnx.Param(jnp.arange(3.0)))

    def step(total: Any, model: Any, x: Any) -> Any:
        return total + model["w"][...] * x, model["w"][...] + x

    out = nnx.scan(step, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0), **mode)(
        jnp.zeros(3), model, jnp.arange(6.0).reshape(2, 3)
    )
    return out, model


def _no_carry(nnx: Any, mode: dict[str, bool]) -> Any:
    return nnx.scan(lambda x, y: (x * y, x + y), in_axes=(0, 1), out_axes=(0, 1), **mode)(
        jnp.arange(6.0).reshape(2, 3), jnp.arange(6.0).reshape(3, 2)
    )


RUNS: dict[str, tuple[Scenario, dict[str, dict[str, bool]]]] = {
    "a StateAxes scanning Params along axis 1 and carrying the rest": (_state_axes_carry, UPDATES),
    "a StateAxes broadcasting Params": (_state_axes_broadcast, UPDATES),
    "a StateAxes broadcasting Params and carrying the rest, scanning none": (_state_axes_unscanned, UPDATES),
    "a StateAxes in out_axes stacking a made Module's Params on axis 1": (_state_axes_out, UPDATES),
    "a Module scanned along axis 1": (_module_along_axis_1, MODES),
    "a broadcast array": (_broadcast_array, MODES),
    "a broadcast Module": (_broadcast_module, MODES),
    "no carry": (_no_carry, MODES),
}
RUN_CASES = [(case, mode) for case, (_, modes) in RUNS.items() for mode in modes]


@pytest.mark.apis("scan", "StateAxes", "Carry")
@pytest.mark.documented(None)
@pytest.mark.parametrize(("case", "mode"), RUN_CASES)
def test_scan_axes_in_each_form_act_as_in_flax(nnx: Any, flax_nnx: Any, case: str, mode: str) -> None:
    scenario, _ = RUNS[case]
    outcome = assert_same(flax_nnx, nnx, lambda nnx: scenario(nnx, MODES[mode]))
    assert outcome.error is None, f"flax scans with {case}: {outcome.error!r}"


def _refused(
    in_axes: Callable[[Any], Any], out_axes: Callable[[Any], Any], args: Callable[[Any], tuple[Any, ...]]
) -> Scenario:
    """A scan of a function returning its arguments, with these axes and arguments."""

    def scenario(nnx: Any, mode: dict[str, bool]) -> Any:
        return nnx.scan(lambda *xs: xs, in_axes=in_axes(nnx), out_axes=out_axes(nnx), **mode)(*args(nnx))

    return scenario


def _making(out_axes: Callable[[Any], Any]) -> Scenario:
    """A scan of a function returning its carry and a Module it makes, with these out_axes."""

    def scenario(nnx: Any, mode: dict[str, bool]) -> Any:
        def make(total: Any, x: Any) -> Any:
            return total, nnx.Dict(w=nnx.Param(x))

        return nnx.scan(make, in_axes=(nnx.Carry, 0), out_axes=out_axes(nnx), **mode)(*_arrays(nnx))

    return scenario


def _arrays(nnx: Any) -> tuple[Any, ...]:
    return jnp.zeros(3), jnp.ones((2, 3))


def _array_and_module(nnx: Any) -> tuple[Any, ...]:
    return jnp.zeros(3), nnx.Dict(w=nnx.Param(jnp.arange(12.0).reshape(3, 4)))


REFUSALS: dict[str, tuple[Scenario, tuple[str, ...], dict[str, dict[str, bool]]]] = {
    "a Carry nested in in_axes": (
        _refused(lambda nnx: ((nnx.Carry, 0),), lambda nnx: (nnx.Carry, 0), lambda nnx: ((jnp.zeros(3), jnp.ones(2)),)),
        ("Carry must", "nested"),
        MODES,
    ),
    "a Carry nested in out_axes": (
        _refused(lambda nnx: (nnx.Carry, 0), lambda nnx: ((nnx.Carry, 0),), _arrays),
        ("Carry must", "nested"),
        MODES,
    ),
    "a Carry in in_axes alone": (
        _refused(lambda nnx: (nnx.Carry, 0), lambda nnx: 0, _arrays),
        ("Carry",),
        MODES,
    ),
    "a StateAxes on an array": (
        _refused(lambda nnx: (nnx.Carry, nnx.StateAxes({...: 0})), lambda nnx: (nnx.Carry, 0), _arrays),
        ("Cannot use StateAxes on non-graph nodes",),
        UPDATES,
    ),
    "a StateAxes on an output array": (
        _refused(lambda nnx: (nnx.Carry, 0), lambda nnx: (nnx.Carry, nnx.StateAxes({...: 0})), _arrays),
        ("Cannot use StateAxes on non-graph nodes",),
        UPDATES,
    ),
    "an axis that is no axis on an array": (
        _refused(lambda nnx: (nnx.Carry, "rows"), lambda nnx: (nnx.Carry, 0), _arrays),
        ("Invalid axes",),
        UPDATES,
    ),
    "an axis that is no axis on a Module": (
        _refused(lambda nnx: (nnx.Carry, "rows"), lambda nnx: (nnx.Carry, 0), _array_and_module),
        ("Invalid axes",),
        UPDATES,
    ),
    "an output axis that is no axis on an array": (
        _refused(lambda nnx: (nnx.Carry, 0), lambda nnx: (nnx.Carry, "rows"), _arrays),
        ("Invalid axes",),
        UPDATES,
    ),
    "an output axis that is no axis on a Module": (
        _making(lambda nnx: (nnx.Carry, "rows")),
        ("Invalid axes",),
        UPDATES,
    ),
    "an output StateAxes with an axis that is no axis": (
        _making(lambda nnx: (nnx.Carry, nnx.StateAxes({...: "rows"}))),
        ("Invalid axes",),
        UPDATES,
    ),
    "an integer axis on a number": (
        _refused(lambda nnx: (nnx.Carry, 0), lambda nnx: (nnx.Carry, 0), lambda nnx: (jnp.zeros(3), 2.0)),
        ("Expected an array, got float",),
        UPDATES,
    ),
    "an output StateAxes broadcasting": (
        _refused(
            lambda nnx: (nnx.Carry, 1),
            lambda nnx: (nnx.Carry, nnx.StateAxes({nnx.Param: None, ...: 0})),
            _array_and_module,
        ),
        ("Cannot broadcast output state",),
        UPDATES,
    ),
    "an output StateAxes carrying": (
        _refused(
            lambda nnx: (nnx.Carry, 1),
            lambda nnx: (nnx.Carry, nnx.StateAxes({nnx.Param: nnx.Carry, ...: 0})),
            _array_and_module,
        ),
        ("Cannot carry output state",),
        UPDATES,
    ),
    "in_axes=Carry with two arguments": (
        _refused(lambda nnx: nnx.Carry, lambda nnx: nnx.Carry, _arrays),
        ("exactly one argument",),
        MODES,
    ),
}
REFUSAL_CASES = [(case, mode) for case, (_, _, modes) in REFUSALS.items() for mode in modes]


@pytest.mark.apis("scan", "StateAxes", "Carry")
@pytest.mark.documented(None)
@pytest.mark.parametrize(("case", "mode"), REFUSAL_CASES)
def test_scan_refuses_axes_as_flax_does(nnx: Any, flax_nnx: Any, case: str, mode: str) -> None:
    scenario, mentions, _ = REFUSALS[case]
    outcome = assert_same(flax_nnx, nnx, lambda nnx: scenario(nnx, MODES[mode]), mentions=mentions)
    assert outcome.error is not None, f"flax refuses {case}"
