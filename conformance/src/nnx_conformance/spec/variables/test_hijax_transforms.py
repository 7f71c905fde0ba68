"""NNX transforms and hijax Variables (``hijax=True``): given a Module that holds one, each
transform runs and returns what flax's returns, in every mode flax runs it; one built
inside ``nnx.jit`` is returned as a Variable of its type, as any other Variable is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same


def _holding(nnx: Any, shape: tuple[int, ...] = (3,)) -> Any:
    return nnx.Dict(p=nnx.Param(jnp.arange(float(jnp.prod(jnp.array(shape)))).reshape(shape), hijax=True))


Mode = dict[str, bool]
TRANSFORMS: dict[str, Callable[[Any, Mode], Any]] = {
    "jit": lambda n, mode: n.jit(lambda m: m.p[...] * 2, **mode)(_holding(n)),
    "grad": lambda n, mode: n.grad(lambda m: (m.p[...] ** 2).sum(), **mode)(_holding(n)),
    "remat": lambda n, mode: n.remat(lambda m: m.p[...] * 2, **mode)(_holding(n)),
    "cond": lambda n, mode: n.cond(True, lambda m: m.p[...] * 2, lambda m: m.p[...], _holding(n), **mode),
    "eval_shape": lambda n, mode: n.eval_shape(lambda m: m.p[...] * 2, _holding(n), **mode),
    "scan": lambda n, mode: n.scan(lambda c, x: (c, x * c.p[...]), in_axes=(n.Carry, 0), out_axes=(n.Carry, 0), **mode)(
        _holding(n), jnp.ones((2, 3))
    )[1],
    "fori_loop": lambda n, mode: n.fori_loop(0, 2, lambda i, m: m, _holding(n), **mode).p[...],
}
MODES = {
    "graph mode with graph updates": {"graph": True, "graph_updates": True},
    "graph mode": {"graph": True, "graph_updates": False},
    "tree mode": {"graph": False, "graph_updates": False},
}
# Where flax 0.12.12 fails with AttributeError (a tracer of the hijax type reaches its
# Variable code: jit and scan with graph updates, vmap in every mode), the reference runs,
# as reference/README.md says; those pairs are not compared.
FLAX_FAILS = {("jit", "graph mode with graph updates"), ("scan", "graph mode with graph updates")}
CASES = [(t, m) for t in TRANSFORMS for m in MODES if (t, m) not in FLAX_FAILS]


@pytest.mark.kind("differential")
@pytest.mark.apis("jit", "grad", "remat", "cond", "eval_shape", "scan", "fori_loop", "Param")
@pytest.mark.documented(None)
@pytest.mark.parametrize(("transform", "mode"), CASES, ids=[f"{t}-{m}" for t, m in CASES])
def test_a_transform_takes_a_module_holding_a_hijax_variable_as_flax(
    nnx: Any, flax_nnx: Any, transform: str, mode: str
) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda n: TRANSFORMS[transform](n, MODES[mode]))
    assert outcome.error is None, f"flax runs {transform} in {mode} on a Module holding a hijax Variable"


@pytest.mark.kind("property")
@pytest.mark.apis("jit", "Param")
@pytest.mark.documented("jit docstring (the function's outputs may hold graph nodes); hijax guide (hijax Variables)")
@pytest.mark.parametrize("returned", ["the Variable", "a Module holding it"])
@pytest.mark.parametrize("mode", MODES)
def test_a_hijax_variable_built_inside_jit_is_returned_with_its_value_and_metadata(
    nnx: Any, mode: str, returned: str
) -> None:
    def build(x: Any) -> Any:
        variable = nnx.Param(x * 2, hijax=True, tag="made inside")
        return variable if returned == "the Variable" else nnx.Dict(p=variable)

    out = nnx.jit(build, **MODES[mode])(jnp.arange(3.0))
    variable = out if returned == "the Variable" else out.p
    assert isinstance(variable, nnx.Param), f"nnx.jit in {mode} returns {type(variable).__name__}, not a Param"
    assert variable.get_metadata("hijax") is True, f"the Param nnx.jit in {mode} returns is not a hijax Variable"
    assert variable.get_metadata("tag") == "made inside", f"the Param nnx.jit in {mode} returns lost its metadata"
    assert variable[...].tolist() == [0.0, 2.0, 4.0], f"the Param nnx.jit in {mode} returns holds {variable[...]}"
