"""Differential tests of indexing the List and Dict Modules as Python sequences and mappings
are indexed (slices read and written, negative and out-of-range indices, keys of the wrong
type), of a List given a key through update, and of TrainState.apply naming its state by
attribute: the results, or the exception flax raises, are flax's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import optax
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("module/pytree")]


def _list(nnx: Any) -> Any:
    return nnx.List([nnx.Param(jnp.full(1, float(i))) for i in range(3)])


def _on_list(operation: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """A scenario running ``operation(nnx, made)`` on a List of three Params, giving back its
    result and the List."""

    def scenario(nnx: Any) -> Any:
        made = _list(nnx)
        return operation(nnx, made), made

    return scenario


def _set(index: Any, value: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    def operation(nnx: Any, made: Any) -> Any:
        made[index] = value(nnx)

    return operation


def _delete(index: Any) -> Callable[[Any, Any], Any]:
    def operation(nnx: Any, made: Any) -> Any:
        del made[index]

    return operation


def _updated_with_key(nnx: Any, made: Any) -> Any:
    nnx.update(made, nnx.State({"name": nnx.Param(jnp.zeros(1))}))


def _static_item_updated(nnx: Any) -> Any:
    made = nnx.List([nnx.Param(jnp.ones(1)), 3])
    nnx.update(made, nnx.State({1: 5}))
    return made


def _dict_missing_key_deleted(nnx: Any) -> Any:
    made = nnx.Dict(a=nnx.Param(jnp.ones(1)))
    del made["missing"]


LIST_CASES: dict[str, Callable[[Any], Any]] = {
    "making it without items": lambda nnx: (len(nnx.List()), list(nnx.List())),
    "reading a slice": _on_list(lambda nnx, made: made[1:]),
    "reading a negative index": _on_list(lambda nnx, made: made[-1]),
    "reading an index past the end": _on_list(lambda nnx, made: made[3]),
    "reading by a string": _on_list(lambda nnx, made: made["0"]),
    "inserting far before the start": _on_list(lambda nnx, made: made.insert(-10, 7)),
    "writing a negative index": _on_list(_set(-1, lambda nnx: nnx.Param(jnp.zeros(1)))),
    "writing an index past the end": _on_list(_set(5, lambda nnx: 1)),
    "writing a slice": _on_list(_set(slice(0, 2), lambda nnx: [nnx.Param(jnp.zeros(1)), nnx.Param(jnp.ones(1))])),
    "writing a slice from what is not iterable": _on_list(_set(slice(0, 2), lambda nnx: 4)),
    "writing a slice from fewer values": _on_list(_set(slice(0, 2), lambda nnx: [nnx.Param(jnp.zeros(1))])),
    "writing by a string": _on_list(_set("0", lambda nnx: 1)),
    "deleting by a string": _on_list(_delete("0")),
    "updating it from a State keyed by a string": _on_list(_updated_with_key),
    "updating its static item from a State": _static_item_updated,
    "deleting a key a Dict lacks": _dict_missing_key_deleted,
}


@pytest.mark.apis("List", "Dict", "update")
@pytest.mark.documented("api helpers page: List, a Module that implements a mutable sequence")
@pytest.mark.parametrize("case", sorted(LIST_CASES))
def test_indexing_a_list_or_dict_module_gives_flax_result_or_error(nnx: Any, flax_nnx: Any, case: str) -> None:
    assert_same(flax_nnx, nnx, LIST_CASES[case], what=case)


def _train_state(nnx: Any) -> Any:
    graphdef, params = nnx.split(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), nnx.Param)
    return nnx.TrainState.create(graphdef, params=params, tx=optax.sgd(0.1))


APPLY_CASES: dict[str, Callable[[Any], Any]] = {
    "its params named by attribute": lambda nnx: _train_state(nnx).apply("params")(jnp.ones((1, 2)))[0],
    "an attribute that holds no State": lambda nnx: _train_state(nnx).apply("step"),
}


@pytest.mark.apis("TrainState")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(APPLY_CASES))
def test_train_state_apply_given_an_attribute_name_gives_flax_result_or_error(
    nnx: Any, flax_nnx: Any, case: str
) -> None:
    assert_same(flax_nnx, nnx, APPLY_CASES[case], what=f"TrainState.apply of {case}")
