"""Differential tests of ``nnx.transform_metadata``: the partition names it removes from the
inputs' ``out_sharding`` inside the call and adds back (and to the outputs) after it, the
checks that the name it removes is there, and the Variable aliasing it refuses."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nnx_conformance.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

NAMES = ("a", "b", None)
RETURNS = ("nothing", "a new model", "the model", "its Variable")


class Call(NamedTuple):
    """One ``transform_metadata`` call on a model holding a (2, 3) Param sharded by ``names``."""

    names: tuple[str | None, ...]
    in_axes: int | None
    out_axes: int
    partition: str | None
    graph: bool
    model_twice: bool
    returns: str


calls = st.builds(
    Call,
    names=st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)),
    in_axes=st.sampled_from([0, 1, -1, None]),
    out_axes=st.sampled_from([0, 1]),
    partition=st.sampled_from(NAMES),
    graph=st.booleans(),
    model_twice=st.booleans(),
    returns=st.sampled_from(RETURNS),
)


def _run(nnx: Any, call: Call) -> dict[str, Any]:
    """Runs ``call``: the shardings the function sees, the model's Param after (also after an
    error, caught), and the output's sharding."""

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.zeros((2, 3)), out_sharding=call.names, eager_sharding=False)

    def function(model: Any, *more: Any) -> Any:
        seen.append(model.w.get_metadata().get("out_sharding"))
        model.w.value += 1
        return {"nothing": None, "a new model": Model(), "the model": model, "its Variable": model.w}[call.returns]

    model, seen = Model(), []
    transformed = nnx.transform_metadata(
        function, in_axes=call.in_axes, out_axes=call.out_axes, partition=call.partition, graph=call.graph
    )
    try:
        out, error = transformed(*([model] * (1 + call.model_twice))), None
    except (ValueError, IndexError) as raised:
        out, error = None, type(raised).__name__
    out_variable = out.w if isinstance(out, nnx.Module) else out
    return {
        "error": error,
        "seen": seen,
        "model": (model.w.get_metadata().get("out_sharding"), float(model.w.value[0, 0])),
        "out": out_variable.get_metadata().get("out_sharding") if out_variable is not None else None,
    }


@pytest.mark.apis("transform_metadata")
@given(call=calls)
def test_transform_metadata_moves_partition_names_as_flax_does(nnx: Any, flax_nnx: Any, call: Call) -> None:
    # flax 0.12.12 in graph mode adds the name back once per occurrence of a model passed twice.
    assume(not (call.graph and call.model_twice))
    assert_same(flax_nnx, nnx, lambda n: _run(n, call))
