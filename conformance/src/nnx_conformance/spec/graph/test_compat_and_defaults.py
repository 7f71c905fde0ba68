"""Differential tests of the mode settings' entry points: ``nnx.compat``'s functions run
in graph mode (its transforms with graph updates too) whatever the global switches say,
as flax's do (under global tree mode a Module holding one Param at two attributes is
taken as a graph, and a structural change made inside a compat transform reaches the
caller); the defaults ``var_defaults()`` returns are read-only."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]


def _tied(nnx: Any) -> Any:
    """A Module holding one Param at ``a`` and ``b``."""
    module = nnx.Module()
    module.a = module.b = nnx.Param(jnp.arange(3.0))
    return module


def _grows(m: Any) -> Any:
    """Adds an attribute (a structural change) and reads the shared Param."""
    m.count = 1
    return m.a[...].sum()


CALLS = {
    "compat.jit": lambda nnx, m: nnx.compat.jit(_grows)(m),
    "compat.grad": lambda nnx, m: nnx.compat.grad(_grows)(m),
    "compat.eval_shape": lambda nnx, m: nnx.compat.eval_shape(_grows, m),
    "compat.split": lambda nnx, m: nnx.compat.split(m),
    "compat.state": lambda nnx, m: nnx.compat.state(m),
    "compat.clone": lambda nnx, m: nnx.compat.clone(m),
    "compat.iter_graph": lambda nnx, m: [path for path, _ in nnx.compat.iter_graph(m)],
}


@pytest.mark.apis("jit", "grad", "eval_shape", "split", "state", "clone", "iter_graph")
@pytest.mark.documented(None)
@pytest.mark.parametrize("call", CALLS)
def test_compat_functions_run_in_graph_mode_under_global_tree_mode_as_flax(nnx: Any, flax_nnx: Any, call: str) -> None:
    def scenario(nnx: Any) -> Any:
        module = _tied(nnx)
        with nnx.set_graph_mode(False), nnx.set_graph_updates(False):
            out = CALLS[call](nnx, module)
        return out, module, getattr(module, "count", None)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("var_defaults")
@pytest.mark.documented(None)
@pytest.mark.parametrize("field", ["hijax", "ref"])
def test_the_defaults_var_defaults_returns_are_read_only_as_flax_s(nnx: Any, flax_nnx: Any, field: str) -> None:
    """Setting a field of the returned defaults raises (as a frozen dataclass does) and
    changes nothing: defaults change through ``var_defaults(...)`` alone."""

    def scenario(nnx: Any) -> Any:
        defaults = nnx.var_defaults()
        try:
            setattr(defaults, field, True)
        finally:
            after = nnx.var_defaults()
        return after

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("var_defaults")
@pytest.mark.documented(None)
@pytest.mark.parametrize("given", [{}, {"hijax": True}, {"hijax": True, "ref": False}], ids=["none", "one", "both"])
def test_the_defaults_class_needs_both_fields_as_flax_s(nnx: Any, flax_nnx: Any, given: dict[str, bool]) -> None:
    """The class of what ``var_defaults()`` returns has no defaults of its own."""

    def scenario(nnx: Any) -> Any:
        made = type(nnx.var_defaults())(**given)
        return made.hijax, made.ref

    assert_same(flax_nnx, nnx, scenario)
