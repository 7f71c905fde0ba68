"""Parity of the Module API with flax.nnx: sow and perturb inside nnx.capture (drawn
Variable types and reductions, init perturbations) and perturb outside it, the ``nnx_sow_capture_noop`` flag,
train / eval / set_attributes, view / with_attributes / view_info and
iter_modules / iter_children, in graph and tree mode where they take one."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

INTERMEDIATES_GUIDE = "guide:extracting_intermediates (sow, perturb and nnx.capture)"
MODULE_PAGE = "api module page (train, eval, set_attributes, iter_modules, iter_children)"
VIEW_GUIDE = "guide:view (nnx.view, with_attributes and view_info)"

REDUCTIONS = ("tuple", "sum")


def _block(nnx: Any, sow_type: str = "Intermediate", reduction: str = "tuple") -> Any:
    """A Block of Linear, Dropout and BatchNorm that sows its features and perturbs its output."""
    options: dict[str, Any] = {}
    if reduction == "sum":
        options = {"reduce_fn": lambda prev, cur: prev + cur, "init_fn": lambda: 0.0}

    class Block(nnx.Module):
        def __init__(self) -> None:
            rngs = nnx.Rngs(0, dropout=1)
            self.linear = nnx.Linear(2, 3, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)

        def features(self, x: Any) -> Any:
            y = self.linear(x)
            self.sow(getattr(nnx, sow_type), "h", y, **options)
            return y

        def __call__(self, x: Any) -> Any:
            y = self.bn(self.dropout(self.features(x)))
            self.sow(getattr(nnx, sow_type), "h", y, **options)
            return self.perturb("out", y)

    return Block()


X = jnp.arange(4.0).reshape(2, 2)


@pytest.mark.apis("Module.sow", "Module.perturb", "capture")
@pytest.mark.documented(INTERMEDIATES_GUIDE)
@given(
    sow_type=st.sampled_from(["Intermediate", "BatchStat"]),
    reduction=st.sampled_from(REDUCTIONS),
    captured=st.sampled_from([("Intermediate",), ("Perturbation",), ("BatchStat",), ()]),
)
def test_capture_collects_what_flax_collects(
    nnx: Any, flax_nnx: Any, sow_type: str, reduction: str, captured: tuple[str, ...]
) -> None:
    assert_same(flax_nnx, nnx, _captures(sow_type, reduction, captured))


@pytest.mark.apis("capture", "Intermediate")
@pytest.mark.documented(INTERMEDIATES_GUIDE)
@pytest.mark.parametrize(
    "base_among_modules", [True, False], ids=["base class among the modules", "base class not among them"]
)
def test_capture_of_method_outputs_records_the_methods_flax_records_and_leaves_them_as_they_were(
    nnx: Any, flax_nnx: Any, base_among_modules: bool
) -> None:
    """``method_outputs`` records the output of each public method and ``__call__`` that a
    Module's own class defines (a jitted one too; an inherited one where its class is among
    the Modules'; a List's never); after the call the Modules call as before.

    Every class is made afresh: flax 0.12.12's ``tabulate`` leaves ``sow`` in the class
    dict of each Module it tabulated, so a capture of a tabulated class (nnx.Linear, after
    the display tests in the same process) wraps ``sow`` itself and recurses."""

    def scenario(nnx: Any) -> Any:
        class Base(nnx.Linear):
            def __call__(self, x: Any) -> Any:
                return super().__call__(x) + 1

        class Dense(Base):
            def scaled(self, x: Any) -> Any:
                return self(x) * 2

            @nnx.jit
            def jitted(self, x: Any) -> Any:
                return self(x) - 1

        class Layers(nnx.List):
            def total(self, x: Any) -> Any:
                return sum(layer(x) for layer in self)

        class Top(nnx.Module):
            def __init__(self) -> None:
                rngs = nnx.Rngs(1)
                self.layers = Layers([(Base if base_among_modules else Dense)(2, 2, rngs=rngs)])
                self.dense = Dense(2, 2, rngs=rngs)

            def __call__(self, x: Any) -> Any:
                return self.layers.total(x) + self.dense.scaled(x) + self.dense.jitted(x)

        top = Top()
        out = nnx.capture(top, nnx.Intermediate, method_outputs=nnx.Intermediate)(X)
        return out, top(X), top.dense.scaled(X), top.layers.total(X)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax calls the Modules after the capture: {outcome.error!r}"


@pytest.mark.apis("capture", "Perturbation")
@pytest.mark.documented(None)
def test_capture_of_intermediates_and_perturbations_sorts_them_as_flax_does(nnx: Any, flax_nnx: Any) -> None:
    """Perturbation subclasses Intermediate: flax gives each captured value to the first type that matches it."""
    assert_same(flax_nnx, nnx, _captures("Intermediate", "tuple", ("Intermediate", "Perturbation")))


def _captures(sow_type: str, reduction: str, captured: tuple[str, ...]) -> Any:
    """A scenario: a Block's call, and a call of it twice, under nnx.capture of the ``captured`` types."""

    def scenario(nnx: Any) -> Any:
        block = _block(nnx, sow_type, reduction)
        types = [getattr(nnx, name) for name in captured]
        out = nnx.capture(block, *types)(X)
        twice = nnx.capture(lambda m, x: m(m(x)[:, :2]), *types)(block, X)
        return out, twice, block

    return scenario


@pytest.mark.graph_mode("graph")  # in tree mode flax 0.12.12's grad differentiates the Rngs count (uint32) and fails
@pytest.mark.apis("capture", "Module.perturb")
@pytest.mark.documented(INTERMEDIATES_GUIDE)
def test_capture_with_init_perturbations_gives_flax_gradients(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        block = _block(nnx)
        _, perturbations = nnx.capture(block, nnx.Perturbation)(X)

        def loss(block: Any, perturbations: Any) -> Any:  # the pytree guide's pattern
            y, _ = nnx.capture(block, nnx.Perturbation, init=perturbations)(X)
            return (y**2).sum()

        return nnx.value_and_grad(loss, argnums=(0, 1))(block, perturbations), block

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to differentiate through the perturbations: {outcome.error!r}"


@pytest.mark.apis("capture", "Module.perturb")
@pytest.mark.documented(INTERMEDIATES_GUIDE)
@given(shift=st.floats(-2.0, 2.0, width=32))
def test_capture_seeds_the_perturbations_of_a_nested_module_from_init_as_flax(
    nnx: Any, flax_nnx: Any, shift: float
) -> None:
    def scenario(nnx: Any) -> Any:
        class Outer(nnx.Module):
            def __init__(self) -> None:
                self.inner = _block(nnx)

            def __call__(self, x: Any) -> Any:
                return self.inner(x)

        outer = Outer()
        _, perturbations = nnx.capture(outer, nnx.Perturbation)(X)
        shifted = jax.tree.map(lambda value: value + shift, perturbations)
        return nnx.capture(outer, nnx.Perturbation, init=shifted)(X), outer

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to seed the perturbations: {outcome.error!r}"


@contextmanager
def _sow_capture_noop(value: bool) -> Iterator[None]:
    """``flax.config``'s ``nnx_sow_capture_noop`` set to ``value`` meanwhile (read from the
    ``flax`` package the implementation is imported as)."""
    config = importlib.import_module("flax").config
    previous = config.nnx_sow_capture_noop
    config.update("nnx_sow_capture_noop", value)
    try:
        yield
    finally:
        config.update("nnx_sow_capture_noop", previous)


@pytest.mark.apis("Module.sow", "Module.perturb")
@pytest.mark.documented("api module page: capture_noop=None uses the nnx_sow_capture_noop config value")
def test_sow_and_perturb_store_nothing_outside_capture_under_the_sow_capture_noop_flag(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        block = _block(nnx)
        with _sow_capture_noop(True):
            y = block(X)
            inside = nnx.capture(block, nnx.Intermediate)(X)[1]
        return y, inside, block

    outcome = assert_same(flax_nnx, nnx, scenario)
    attributes = [name for name, _ in outcome.result[1][2][1]]
    assert attributes == ["bn", "dropout", "linear"], f"flax's sow and perturb store nothing in the Block: {attributes}"


@pytest.mark.graph_mode("graph")  # in tree mode flax 0.12.12's grad differentiates the Rngs count (uint32) and fails
@pytest.mark.apis("Module.perturb", "grad")
@pytest.mark.documented(INTERMEDIATES_GUIDE)
@given(shift=st.lists(st.integers(-3, 3).map(float), min_size=3, max_size=3))
def test_a_perturbation_made_outside_capture_is_added_to_the_value_and_takes_its_gradient_as_in_flax(
    nnx: Any, flax_nnx: Any, shift: list[float]
) -> None:
    """Outside ``nnx.capture`` (deprecated, as flax warns) the first call stores a zero
    Perturbation; later calls add it to the value, so its gradient is the value's."""

    def scenario(nnx: Any) -> Any:
        block = _block(nnx)
        block(X)
        block.out[...] = jnp.asarray(shift)
        shifted = block(X)

        def loss(block: Any) -> Any:
            return (block(X) ** 2).sum()

        grads = nnx.grad(loss, argnums=nnx.DiffState(0, nnx.Perturbation))(block)
        return shifted, grads, block

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax perturbs outside capture: {outcome.error!r}"


def _switches(nnx: Any, m: Any) -> list[Any]:
    return [
        (getattr(sub, "deterministic", None), getattr(sub, "use_running_average", None)) for sub in (m.dropout, m.bn)
    ]


@pytest.mark.apis("Module.train", "Module.eval", "Module.set_attributes")
@pytest.mark.documented(MODULE_PAGE)
@given(
    calls=st.lists(
        st.sampled_from(["train", "eval", "dropout_only", "by_name", "missing", "missing_ignored"]),
        min_size=1,
        max_size=3,
    ),
    graph=st.booleans(),
)
def test_train_eval_and_set_attributes_switch_what_flax_switches(
    nnx: Any, flax_nnx: Any, calls: list[str], graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        m = _block(nnx)
        seen = []
        for call in calls:
            if call == "train":
                m.train()
            elif call == "eval":
                m.eval()
            elif call == "dropout_only":
                m.set_attributes(nnx.Dropout, deterministic=True, graph=graph)
            elif call == "by_name":
                m.set_attributes(use_running_average=True, graph=graph)
            else:
                m.set_attributes(momentum=0.5, raise_if_not_found=call == "missing", graph=graph)
            seen.append(_switches(nnx, m))
        return seen, m(X), m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("view", "with_attributes")
@pytest.mark.documented(VIEW_GUIDE)
@given(
    api=st.sampled_from(["view", "with_attributes"]),
    only=st.sampled_from(["all", "Dropout", "BatchNorm"]),
    raise_if_not_found=st.booleans(),
    extra=st.booleans(),
    graph=st.booleans(),
)
def test_view_and_with_attributes_give_flax_copies(
    nnx: Any, flax_nnx: Any, api: str, only: str, raise_if_not_found: bool, extra: bool, graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        m = _block(nnx)
        attributes = {"deterministic": True, "use_running_average": True} | ({"unknown": 1} if extra else {})
        kwargs: dict[str, Any] = {"only": ... if only == "all" else getattr(nnx, only), "graph": graph}
        viewed = getattr(nnx, api)(m, raise_if_not_found=raise_if_not_found, **kwargs, **attributes)
        viewed.linear.kernel[...] += 1
        return _switches(nnx, viewed), _switches(nnx, m), viewed.linear.kernel is m.linear.kernel, m

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("view_info")
@pytest.mark.documented(VIEW_GUIDE)
@pytest.mark.parametrize("only", ["all", "Dropout"])
def test_view_info_lists_what_flax_lists(nnx: Any, flax_nnx: Any, only: str) -> None:
    def scenario(nnx: Any) -> Any:
        return nnx.view_info(_block(nnx), only=... if only == "all" else nnx.Dropout).splitlines()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Module.iter_modules", "Module.iter_children", "iter_modules", "iter_children")
@pytest.mark.documented(MODULE_PAGE)
def test_iter_modules_and_iter_children_visit_what_flax_visits(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        m = _block(nnx)
        m.again = m.linear
        m.nested = nnx.List([nnx.Dropout(0.1), nnx.Linear(1, 1, rngs=nnx.Rngs(0))])
        return (
            list(m.iter_modules()),
            list(m.iter_children()),
            list(nnx.iter_modules(m)),
            list(nnx.iter_children(m)),
        )

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Module.sow", "capture")
@pytest.mark.documented(None)
def test_sow_returns_what_flax_s_returns_inside_and_outside_capture(nnx: Any, flax_nnx: Any) -> None:
    def scenario(nnx: Any) -> Any:
        class Sower(nnx.Module):
            def __call__(self, x: Any) -> Any:
                return self.sow(nnx.Intermediate, "seen", x), self.sow(nnx.Intermediate, "seen", x * 2)

        sower = Sower()
        outside = sower(jnp.ones(2))
        inside, captured = nnx.capture(sower, nnx.Intermediate)(jnp.ones(2))
        return outside, inside, captured

    assert_same(flax_nnx, nnx, scenario)
