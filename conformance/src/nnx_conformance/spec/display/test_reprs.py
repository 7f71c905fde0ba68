"""Differential tests of reprs: what ``repr`` (and so ``print``) shows of layers as built and
of the abstract Modules ``nnx.eval_shape`` returns, character for character as flax's, with
memory addresses masked and the implementation's module path read as flax.nnx."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nnx_conformance.outputs import DocOutputChecker
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("display")]


def _rngs(nnx: Any) -> Any:
    return nnx.Rngs(0)


LAYERS: dict[str, Callable[[Any], Any]] = {
    "an LSTMCell": lambda nnx: nnx.LSTMCell(2, 3, rngs=_rngs(nnx)),
    "a GRUCell": lambda nnx: nnx.GRUCell(2, 3, rngs=_rngs(nnx)),
    "an OptimizedLSTMCell": lambda nnx: nnx.OptimizedLSTMCell(2, 3, rngs=_rngs(nnx)),
    "a SimpleCell with residual": lambda nnx: nnx.SimpleCell(2, 3, residual=True, rngs=_rngs(nnx)),
    "an RNN of a GRUCell": lambda nnx: nnx.RNN(nnx.GRUCell(2, 3, rngs=_rngs(nnx))),
    "a Linear": lambda nnx: nnx.Linear(2, 3, rngs=_rngs(nnx)),
    "a BatchNorm": lambda nnx: nnx.BatchNorm(3, rngs=_rngs(nnx)),
}


def _shown(nnx: Any, value: Any) -> str:
    return DocOutputChecker(nnx.__name__).normalize(repr(value))


@pytest.mark.apis("LSTMCell", "GRUCell", "OptimizedLSTMCell", "SimpleCell", "RNN", "Linear", "BatchNorm")
@pytest.mark.documented(None)
@pytest.mark.parametrize("abstract", [False, True], ids=["built", "from eval_shape"])
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_s_repr_is_flax_s(nnx: Any, flax_nnx: Any, layer: str, abstract: bool) -> None:
    """Attributes in the order flax sets them; under ``eval_shape`` each value a
    ``ShapeDtypeStruct``, printed whole, and the State of it as flax prints it."""

    def scenario(nnx: Any) -> Any:
        made = nnx.eval_shape(lambda: LAYERS[layer](nnx)) if abstract else LAYERS[layer](nnx)
        return _shown(nnx, made), _shown(nnx, nnx.state(made))

    assert_same(flax_nnx, nnx, scenario)
