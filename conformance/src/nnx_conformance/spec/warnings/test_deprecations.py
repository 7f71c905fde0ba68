"""Parity of deprecations and no-op capture with flax.nnx: the DeprecationWarnings flax
emits (nnx.Data[...], Module.sow/perturb outside nnx.capture, nnx.vars_as, Variable.value
read or set, nnx.VariableState, the Module and State methods that have a function of their own), its
UserWarnings (recurrent cells' settings, Variable hooks) and the line each points at, and sow/perturb with
``capture_noop=True`` storing nothing outside
nnx.capture."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")


def _sower(nnx: Any, **options: Any) -> Any:
    class Sower(nnx.Module):
        def __call__(self, x: Any) -> Any:
            self.sow(nnx.Intermediate, "y", x, **options)
            return self.perturb("p", x, **options)

    return Sower()


def _data_annotation(nnx: Any) -> Any:
    class Annotated(nnx.Module):
        x: nnx.Data[int]

        def __init__(self) -> None:
            self.x = jnp.ones(1)

    return Annotated()


def _sow_outside_capture(nnx: Any) -> Any:
    m = _sower(nnx)
    return m(jnp.ones(2)), m


def _vars_as(nnx: Any) -> Any:
    return nnx.vars_as(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), ref=True)


def _value_access(nnx: Any) -> Any:
    variable = nnx.Param(jnp.ones(2))
    variable.value = variable.value + 1
    return variable


def _state_methods(nnx: Any) -> Any:
    state = nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    kernel, rest = state.split(nnx.PathContains("kernel"), ...)
    state.replace_by_pure_dict(state.to_pure_dict())
    return (
        state.flat_state(),
        type(state).from_flat_path(state.flat_state()),
        state.map(lambda path, v: v * 2),
        state.filter(nnx.Param),
        type(state).merge(kernel, rest),
        kernel | rest,
        state - kernel,
        state,
    )


def _fork_with_split(nnx: Any) -> Any:
    return nnx.Rngs(a=0, b=1, c=2).fork(split={"a": 2, "b": (2, 3), ...: None})


def _module_methods(nnx: Any) -> Any:
    m = nnx.Sequential(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
    return list(m.iter_modules()), list(m.iter_children())


def _abstract_with_sharding(nnx: Any) -> Any:
    return nnx.abstract_with_sharding(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))


def _pure(nnx: Any) -> Any:
    return nnx.pure(nnx.state(nnx.Linear(1, 1, rngs=nnx.Rngs(0))))


def _sharding_names(nnx: Any) -> Any:
    variable = nnx.Param(jnp.ones(2), sharding_names=(None,), eager_sharding=False)
    return variable.sharding_names, variable


def _sharding_names_set(nnx: Any) -> Any:
    """``sharding_names`` given to ``set_metadata`` as an entry, a keyword and in a dict."""
    variable = nnx.Param(jnp.ones(2), eager_sharding=False)
    variable.set_metadata("sharding_names", (None,))
    variable.set_metadata(sharding_names=(None,))
    variable.set_metadata({**variable.get_metadata(), "sharding_names": (None,)})
    return variable.get_metadata()


def _variable_state(nnx: Any) -> Any:
    module = sys.modules[nnx.__name__]  # the module itself: through the suite's proxy, the proxy reads the name
    return module.VariableState(jnp.ones(1))


DEPRECATED = {
    "abstract_with_sharding": (_abstract_with_sharding, ("as_abstract",)),
    "pure": (_pure, ("as_pure",)),
    "sharding_names": (_sharding_names, ("'sharding_names'",)),
    "sharding_names set as metadata": (_sharding_names_set, ("'sharding_names'",)),
    "Data": (_data_annotation, ("Data",)),
    "sow_and_perturb": (_sow_outside_capture, ("Module.sow()", "Module.perturb()")),
    "vars_as": (_vars_as, ("with_vars",)),
    "Rngs.fork with split": (_fork_with_split, ("'split' argument of 'fork'",)),
    "Module methods": (_module_methods, ("'m.iter_modules()'", "'m.iter_children()'")),
    "Variable.value": (_value_access, ("'.value' access", "'.value' setter")),
    "VariableState": (_variable_state, ("'VariableState'",)),
    "State methods": (
        _state_methods,
        (
            "nnx.split_state",
            "nnx.to_pure_dict",
            "nnx.replace_by_pure_dict",
            "nnx.to_flat_state",
            "nnx.from_flat_state",
            "nnx.map_state",
            "nnx.filter_state",
            "nnx.merge_state",
            "nnx.diff",
        ),
    ),
}


@pytest.mark.apis(
    "Data",
    "Module",
    "vars_as",
    "Variable",
    "State",
    "iter_modules",
    "iter_children",
    "Rngs",
    "abstract_with_sharding",
    "pure",
)
@pytest.mark.documented(None)
@pytest.mark.parametrize("use", sorted(DEPRECATED))
def test_deprecated_uses_warn_as_in_flax(nnx: Any, flax_nnx: Any, use: str) -> None:
    scenario, names = DEPRECATED[use]
    outcome = assert_same(flax_nnx, nnx, scenario, deprecated=names)
    assert outcome.error is None, f"flax runs the deprecated use {use}"


def _cell_settings(nnx: Any) -> Any:
    """A recurrent cell given the settings flax warns about (UserWarnings, not deprecations)."""
    return nnx.LSTMCell(2, 3, carry_init=nnx.initializers.zeros_init(), keep_rngs=True, rngs=nnx.Rngs(0))


def _unchanged(variable: Any, value: Any) -> Any:
    return value


def _variable_hooks(nnx: Any) -> Any:
    """Variables made with hooks, given directly and through ``with_metadata`` (UserWarnings)."""
    init = nnx.with_metadata(nnx.initializers.ones, on_get_value=_unchanged)
    return nnx.Param(jnp.ones(1), on_set_value=_unchanged), nnx.Linear(1, 1, kernel_init=init, rngs=nnx.Rngs(0))


WARNED = {
    **{use: scenario for use, (scenario, _) in DEPRECATED.items()},
    "cell settings": _cell_settings,
    "Variable hooks": _variable_hooks,
}
"""Every use that warns, by name: the deprecated ones, the recurrent cells' settings, hooks."""


def _blamed(nnx: Any, use: str) -> list[tuple[str, str, str]]:
    """Each warning of ``use`` on ``nnx``: its category, its message's first words, and whether
    it points at the caller (a line of this module, which both implementations run alike, by
    its number) or elsewhere (inside the library)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        WARNED[use](nnx)
    return [
        (
            w.category.__name__,
            " ".join(str(w.message).split()[:4]),
            f"the caller, line {w.lineno}" if w.filename == __file__ else "elsewhere",
        )
        for w in caught
        if issubclass(w.category, (DeprecationWarning, UserWarning))
    ]


@pytest.mark.apis(
    "Data",
    "Module",
    "vars_as",
    "Variable",
    "State",
    "LSTMCell",
    "Rngs",
    "abstract_with_sharding",
    "pure",
    "with_metadata",
)
@pytest.mark.documented(None)
@pytest.mark.parametrize("use", sorted(WARNED))
def test_a_warning_points_where_flax_s_points(nnx: Any, flax_nnx: Any, use: str) -> None:
    """A warning names the line that should change: its stack level is flax's."""
    with flax_nnx.active():
        expected = _blamed(flax_nnx.nnx, use)
    got = _blamed(nnx, use)
    assert got == expected, f"the warnings of {use}: expected {expected} as flax.nnx's, got {got}"


@pytest.mark.apis("Module", "capture")
@pytest.mark.documented("guide:extracting_intermediates (capture_noop: sow and perturb do nothing outside capture)")
def test_sow_and_perturb_with_capture_noop_store_nothing_outside_capture(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        m = _sower(nnx, capture_noop=True)
        return m(jnp.ones(2)), m

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.result[1][1] == ("Sower", []), f"flax stores nothing: {outcome.result[1][1]}"
