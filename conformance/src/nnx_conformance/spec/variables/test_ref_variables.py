"""Laws of Variables whose value lives in a ``jax.Ref`` (``ref=True``) and of hijax
Variables (``hijax=True``) under transforms.

A ref Variable is written in place, so an NNX transform that updates one leaves it as
eager execution would, in graph mode ("reference semantics") and in tree mode alike.
A hijax Variable without ``ref=True`` is read-only under JAX transforms (see the error
tests) and is passed to ``jax.jit`` as a value, so the same one may be passed twice;
gradients through hijax Variables are those of their values. One made inside ``jit`` or
``eval_shape`` is returned, or refused, as flax's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("property")

Update = Callable[[Any], None]

TRANSFORMS: dict[str, Callable[[Any, Update, bool], Update]] = {
    "jit": lambda nnx, f, graph: nnx.jit(f, graph=graph),
    "cond": lambda nnx, f, graph: lambda model: nnx.cond(True, f, f, model, graph=graph),
    "remat": lambda nnx, f, graph: nnx.remat(f, graph=graph),
    "checkify": lambda nnx, f, graph: lambda model: nnx.checkify(f, graph=graph)(model)[0].throw(),
}
"""Each transform applied to an update function of one Module argument."""


@pytest.mark.apis("jit", "cond", "remat", "checkify")
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@given(value=strategies.arrays(), amounts=st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_updates_to_a_ref_variable_under_a_transform_are_seen_outside_as_after_eager_execution(
    nnx: Any, transform: str, graph: bool, value: Any, amounts: list[int]
) -> None:
    def add_all(model: Any) -> None:
        for amount in amounts:
            model.count[...] += amount

    eager = nnx.Dict(count=nnx.Variable(value, ref=True))
    add_all(eager)
    model = nnx.Dict(count=nnx.Variable(value, ref=True))
    TRANSFORMS[transform](nnx, add_all, graph)(model)
    np.testing.assert_array_equal(
        np.asarray(model.count[...]),
        np.asarray(eager.count[...]),
        err_msg=f"a ref=True Variable after nnx.{transform}(graph={graph}) of adding {amounts} "
        "should hold what eager execution leaves",
    )


@pytest.mark.apis("Variable")
@given(value=strategies.arrays())
def test_one_hijax_variable_may_be_passed_twice_to_jax_jit_and_reads_as_its_value(nnx: Any, value: Any) -> None:
    variable = nnx.Variable(value, hijax=True)
    total = jax.jit(lambda a, b: a[...] + b[...])(variable, variable)
    np.testing.assert_array_equal(
        np.asarray(total),
        np.asarray(value + value),
        err_msg="jax.jit(f)(v, v) of a hijax Variable should read v's value on both sides",
    )


@pytest.mark.apis("Variable")
@given(value=strategies.arrays())
def test_jax_grad_with_respect_to_a_hijax_variable_holds_the_gradient_of_its_value(nnx: Any, value: Any) -> None:
    value = value.astype(np.float32)
    gradient = jax.grad(lambda v: (v[...] ** 2).sum())(nnx.Variable(value, hijax=True))
    np.testing.assert_array_equal(
        np.asarray(gradient[...]),
        np.asarray(2 * value),
        err_msg="jax.grad of sum(v ** 2) for a hijax Variable v should hold 2 * v",
    )


@pytest.mark.apis("grad", "var_defaults", "Linear")
@given(din=st.integers(1, 3), dout=st.integers(1, 3), batch=st.integers(1, 2), seed=st.integers(0, 3))
def test_nnx_grad_is_the_same_for_a_module_whether_its_variables_are_hijax_or_not(
    nnx: Any, din: int, dout: int, batch: int, seed: int
) -> None:
    with nnx.var_defaults(hijax=True):
        hijax_model = nnx.Linear(din, dout, rngs=nnx.Rngs(seed))
    model = nnx.Linear(din, dout, rngs=nnx.Rngs(seed))
    x = jax.random.normal(jax.random.key(seed), (batch, din))

    def loss(m: Any) -> Any:
        return (m(x) ** 2).sum()

    expected = {tuple(p): v[...] for p, v in nnx.to_flat_state(nnx.grad(loss)(model))}
    got = {tuple(p): v[...] for p, v in nnx.to_flat_state(nnx.grad(loss)(hijax_model))}
    assert sorted(got) == sorted(expected), f"the hijax gradient has paths {sorted(got)}, expected {sorted(expected)}"
    for path, gradient in expected.items():
        np.testing.assert_allclose(
            np.asarray(got[path]),
            np.asarray(gradient),
            rtol=1e-6,
            err_msg=f"the gradient at {path} differs between hijax and plain Variables",
        )


MADE_INSIDE = {
    "jit": lambda nnx, make, mode: nnx.jit(make, **mode)(np.ones(2, np.float32)),
    "eval_shape": lambda nnx, make, mode: nnx.eval_shape(make, np.ones(2, np.float32), **mode),
}


@pytest.mark.kind("differential")
@pytest.mark.apis("jit", "eval_shape", "Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize(
    "mode",
    [{}, {"graph": False}, {"graph": True, "graph_updates": False}],
    ids=["graph mode", "tree mode", "graph mode without graph updates"],
)
@pytest.mark.parametrize("held", ["bare", "in a Module"])
@pytest.mark.parametrize("transform", sorted(MADE_INSIDE))
def test_a_ref_variable_made_inside_a_transform_is_returned_or_refused_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, held: str, mode: dict[str, bool]
) -> None:
    """flax 0.12.12: graph-mode eval_shape returns it (its value abstract); jit, and
    eval_shape in the other modes, refuse it with JAX's ValueError (a Ref returned)."""

    def scenario(nnx: Any) -> Any:
        def make(x: Any) -> Any:
            variable = nnx.Param(x * 2, ref=True)
            return variable if held == "bare" else nnx.Dict(a=variable)

        made = MADE_INSIDE[transform](nnx, make, mode)
        variable = made if held == "bare" else made.a
        return type(variable).__name__, variable.ref, type(variable.get_raw_value()).__name__

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("differential")
@pytest.mark.apis("eval_shape", "Variable")
@pytest.mark.documented(None)
@pytest.mark.parametrize("returned", ["the Variable", "its Module and a value"])
def test_eval_shape_gives_an_input_ref_variable_back_abstract_as_in_flax(
    nnx: Any, flax_nnx: Any, returned: str
) -> None:
    """The Variable eval_shape returns holds a ShapeDtypeStruct; the caller's keeps its Ref."""

    def scenario(nnx: Any) -> Any:
        model = nnx.Dict(v=nnx.Param(np.ones(2, np.float32), ref=True))
        if returned == "the Variable":
            out = nnx.eval_shape(lambda m: m.v, model).get_raw_value()
        else:
            module, value = nnx.eval_shape(lambda m: (m, m.v[...]), model)
            out = (module.v.get_raw_value(), value)
        return [type(x).__name__ for x in jax.tree.leaves(out)], type(model.v.get_raw_value()).__name__

    assert_same(flax_nnx, nnx, scenario)
