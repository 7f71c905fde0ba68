"""Differential tests of ``nnx.transform_metadata``: the partition names it removes from the
inputs' ``out_sharding`` inside the call and adds back (and to the outputs) after it, the
checks that the name it removes is there, the Variable aliasing it refuses, and what of the
function's changes to its inputs it keeps."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

NAMES = ("a", "b", None)
RETURNS = ("nothing", "a new model", "the model", "its Variable")
CHANGES = ("its value", "its metadata", "an attribute", "the original's value", "nothing")
"""What the function changes: of the copy of the model it is given, or of the original model
itself (reached through a closure), which flax keeps where the copy is unchanged."""


class Call(NamedTuple):
    """One ``transform_metadata`` call on a model holding a (2, 3) Param sharded by ``names``
    (or without ``out_sharding`` if ``names`` is None; at two attributes if ``shared``), passed once or twice (the
    second time by keyword if
    ``by_keyword``); the function changes what ``changes`` says and returns ``returns``."""

    names: tuple[str | None, ...] | None
    in_axes: int | None
    out_axes: int
    partition: str | None
    graph: bool
    shared: bool
    model_twice: bool
    by_keyword: bool
    changes: str
    returns: str


calls = st.builds(
    Call,
    names=st.none() | st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)),
    in_axes=st.sampled_from([0, 1, -1, None]),
    out_axes=st.sampled_from([0, 1]),
    partition=st.sampled_from(NAMES),
    graph=st.booleans(),
    shared=st.booleans(),
    model_twice=st.booleans(),
    by_keyword=st.booleans(),
    changes=st.sampled_from(CHANGES),
    returns=st.sampled_from(RETURNS),
)


def _run(nnx: Any, call: Call) -> dict[str, Any]:
    """Runs ``call``: the shardings the function sees, the model's Params after (also after an
    error, caught), and the output's sharding."""

    sharding = {} if call.names is None else {"out_sharding": call.names, "eager_sharding": False}

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.zeros((2, 3)), **sharding)
            self.v = self.w if call.shared else nnx.Param(jnp.zeros((2, 3)), **sharding)

    def function(model: Any, other: Any = None) -> Any:
        seen.append(model.w.get_metadata().get("out_sharding"))
        if call.changes == "its value":
            model.w[...] += 1
        elif call.changes == "its metadata":
            model.w.set_metadata("note", "changed")
        elif call.changes == "an attribute":
            model.w = nnx.Param(jnp.ones((2, 3)), **sharding)
        elif call.changes == "the original's value":
            original[0].w[...] += 5
        return {"nothing": None, "a new model": Model(), "the model": model, "its Variable": model.w}[call.returns]

    model, seen = Model(), []
    original = [model]
    transformed = nnx.transform_metadata(
        function, in_axes=call.in_axes, out_axes=call.out_axes, partition=call.partition, graph=call.graph
    )
    second = [model] if call.model_twice and not call.by_keyword else []
    by_keyword = {"other": model} if call.model_twice and call.by_keyword else {}
    try:
        out, error = transformed(model, *second, **by_keyword), None
    except (ValueError, IndexError) as raised:
        out, error = None, type(raised).__name__
    out_variable = out.w if isinstance(out, nnx.Module) else out
    return {
        "error": error,
        "seen": seen,
        "model": [_described(param) for param in (model.w, model.v)],
        "same Param": model.w is model.v,
        "out": out_variable.get_metadata().get("out_sharding") if out_variable is not None else None,
    }


def _described(param: Any) -> tuple[list[str | None] | None, str | None, float]:
    """A Param's partition names (a new list: flax's Params may share one tuple; None without
    ``out_sharding``), note and first value."""
    metadata = param.get_metadata()
    names = metadata.get("out_sharding")
    return None if names is None else list(names), metadata.get("note"), float(param[0, 0])


@pytest.mark.apis("transform_metadata")
@given(call=calls)
# the original changed through a closure while its unsharded copy is not: flax keeps the change
@example(
    call=Call(
        names=None,
        in_axes=0,
        out_axes=0,
        partition="a",
        graph=True,
        shared=False,
        model_twice=False,
        by_keyword=False,
        changes="the original's value",
        returns="nothing",
    )
)
# the function replaces its copy's Variable: that copy, left without the name, is not written
# back, and the new Variable it returns is no input's
@example(
    call=Call(
        names=("a", "a"),
        in_axes=0,
        out_axes=0,
        partition="a",
        graph=False,
        shared=False,
        model_twice=False,
        by_keyword=False,
        changes="an attribute",
        returns="nothing",
    )
)
@example(
    call=Call(
        names=None,
        in_axes=0,
        out_axes=0,
        partition="a",
        graph=False,
        shared=False,
        model_twice=False,
        by_keyword=False,
        changes="an attribute",
        returns="its Variable",
    )
)
def test_transform_metadata_moves_partition_names_as_flax_does(nnx: Any, flax_nnx: Any, call: Call) -> None:
    assert_same(flax_nnx, nnx, lambda n: _run(n, call))


CHANGES = [
    "nothing",
    "a metadata entry set to an equal list",
    "a metadata entry set to another list",
    "a new metadata entry",
    "the value",
    "the value and a metadata entry",
]


@pytest.mark.apis("transform_metadata")
@pytest.mark.parametrize("change", CHANGES)
def test_transform_metadata_writes_back_what_the_function_changed_as_flax(nnx: Any, flax_nnx: Any, change: str) -> None:
    """The caller's Variable gets the function's changes to its value and metadata: which
    entries it then holds, and whether they are the objects the function set or its own."""

    def scenario(n: Any) -> Any:
        old, new = ["x"], (["x"] if "equal" in change else ["y"])
        model = n.Dict(
            w=n.Param(jnp.ones((2, 3)), out_sharding=("a", "b"), eager_sharding=False, scale=np.ones(3), tags=old)
        )

        def function(m: Any) -> None:
            if "entry set" in change or change == "the value and a metadata entry":
                m.w.set_metadata("tags", new)
            if change == "a new metadata entry":
                m.w.set_metadata("extra", 1)
            if "value" in change:
                m.w[...] += 1

        n.transform_metadata(function, in_axes=1, partition="b", graph=True)(model)
        metadata = model.w.get_metadata()
        return metadata["tags"], metadata["tags"] is new, metadata["tags"] is old, "extra" in metadata, model.w[...]

    assert_same(flax_nnx, nnx, scenario)
