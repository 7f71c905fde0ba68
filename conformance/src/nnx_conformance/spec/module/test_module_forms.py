"""Parity with flax.nnx of the less common forms of the Module API: ``sow`` and ``perturb``
given a collection name instead of a Variable type, and outside ``nnx.capture`` (with
``capture_noop=False``) into an attribute of the wrong kind; ``nnx.view`` of a Module
whose ``set_view`` takes ``**kwargs``; ``nnx.capture`` of a bound method; and
``view_info`` of a ``set_view`` parameter without a default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented(None)]

X = jnp.arange(3.0)


def _sower(nnx: Any, kind: str) -> Any:
    class Sower(nnx.Module):
        def __call__(self, x: Any) -> Any:
            self.sow(kind, "seen", x)
            return self.perturb("moved", x, variable_type=kind) * 2

    return Sower()


@pytest.mark.apis("Module.sow", "Module.perturb", "capture")
@pytest.mark.parametrize("kind", ["intermediates", "perturbations", "params"])
def test_sow_and_perturb_take_a_collection_name_for_the_variable_type_as_flax(
    nnx: Any, flax_nnx: Any, kind: str
) -> None:
    """The name is looked up as ``variable_type_from_name`` looks it up (registering it)."""

    def scenario(nnx: Any) -> Any:
        variable_type = nnx.variable_type_from_name(kind, allow_register=True)
        return nnx.capture(_sower(nnx, kind), variable_type)(X)

    assert_same(flax_nnx, nnx, scenario)


WRONG_ATTRIBUTES: dict[str, Callable[[Any], Any]] = {
    "an array": lambda nnx: jnp.ones(3),
    "a Param": lambda nnx: nnx.Param(jnp.ones(3)),
    "an Intermediate": lambda nnx: nnx.Intermediate((jnp.ones(3),)),
    "a Perturbation": lambda nnx: nnx.Perturbation(jnp.ones(3)),
}


@pytest.mark.apis("Module.sow", "Module.perturb")
@pytest.mark.parametrize("method", ["sow", "perturb"])
@pytest.mark.parametrize("held", WRONG_ATTRIBUTES)
def test_sow_and_perturb_outside_capture_check_the_attribute_they_write_as_flax(
    nnx: Any, flax_nnx: Any, held: str, method: str
) -> None:
    """With ``capture_noop=False`` outside ``nnx.capture`` they write the Module's attribute
    of that name, which must be a Variable (``sow``) or one of the type asked for
    (``perturb``): ValueError otherwise."""

    def scenario(nnx: Any) -> Any:
        module = nnx.Module()
        module.seen = WRONG_ATTRIBUTES[held](nnx)
        if method == "sow":
            out = module.sow(nnx.Intermediate, "seen", X, capture_noop=False)
        else:
            out = module.perturb("seen", X, capture_noop=False)
        return out, module.seen

    assert_same(flax_nnx, nnx, scenario, mentions=("seen",))


@pytest.mark.apis("view", "view_info")
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
@pytest.mark.parametrize("raise_if_not_found", [True, False])
def test_view_passes_every_attribute_to_a_set_view_taking_keywords_as_flax(
    nnx: Any, flax_nnx: Any, graph: bool, raise_if_not_found: bool
) -> None:
    """A ``set_view(**kwargs)`` takes all the keywords, so none is left unused."""

    def scenario(nnx: Any) -> Any:
        class Open(nnx.Module):
            def __init__(self) -> None:
                self.given: dict[str, Any] = {}
                self.inner = nnx.Dropout(0.5)

            def set_view(self, **kwargs: Any) -> None:
                self.given = dict(kwargs)

        viewed = nnx.view(Open(), deterministic=True, unknown=1, raise_if_not_found=raise_if_not_found, graph=graph)
        return sorted(viewed.given.items()), viewed.inner.deterministic, nnx.view_info(Open())

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("capture", "Module.sow")
@pytest.mark.parametrize("method", ["a bound method", "the Module"])
def test_capture_of_a_bound_method_collects_what_flax_collects(nnx: Any, flax_nnx: Any, method: str) -> None:
    def scenario(nnx: Any) -> Any:
        class Twice(nnx.Module):
            def __init__(self) -> None:
                self.linear = nnx.Linear(3, 2, rngs=nnx.Rngs(0))

            def features(self, x: Any) -> Any:
                y = self.linear(x)
                self.sow(nnx.Intermediate, "h", y)
                return y

            def __call__(self, x: Any) -> Any:
                return self.features(x)

        module = Twice()
        target = module.features if method == "a bound method" else module
        return nnx.capture(target, nnx.Intermediate, method_outputs=nnx.Intermediate)(X)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("view_info")
@pytest.mark.parametrize("documented", [True, False], ids=["with a docstring", "without"])
def test_view_info_shows_a_set_view_parameter_without_a_default_as_flax(
    nnx: Any, flax_nnx: Any, documented: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Needy(nnx.Module):
            def set_view(self, mode: str, flag: bool = False) -> None:
                """Sets the view.

                Args:
                  mode: the mode.
                  flag: a flag.
                """

        if not documented:
            Needy.set_view.__doc__ = None
        return nnx.view_info(Needy())

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("capture", "Module.perturb")
@pytest.mark.parametrize("extra", [False, True], ids=["the captured state", "with an array beside it"])
def test_capture_seeds_several_perturbations_of_one_module_from_init_as_flax(
    nnx: Any, flax_nnx: Any, extra: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        class Two(nnx.Module):
            def __call__(self, x: Any) -> Any:
                return self.perturb("a", x) + self.perturb("b", x * 2)

        module = Two()
        _, perturbations = nnx.capture(module, nnx.Perturbation)(X)
        init = jax.tree.map(lambda value: value + 1, perturbations)
        if extra:
            init = nnx.State({"extra": jnp.ones(1), **dict(init)})
        return nnx.capture(module, nnx.Perturbation, init=init)(X)

    assert_same(flax_nnx, nnx, scenario)
