"""Differential tests of the State forms the drawn graphs do not reach: a FlatState sliced
and merged on its own, a State made through its generic alias, a union or difference with
an empty State, merge_state of one state, replace_by_pure_dict with integer keys written as
strings (as a checkpoint gives them back), unflatten_mapping of what is no mapping, and the
text treescope renders for a State and the States nested in it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest
import treescope

from nnx_conformance.outputs import DocOutputChecker
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("state")]


def _state(nnx: Any) -> Any:
    return nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))


def _flat_state_sliced(nnx: Any) -> Any:
    flat = nnx.to_flat_state(_state(nnx))
    tail = flat[1:]
    return type(tail).__name__, list(tail), flat[0]


def _flat_state_merged_alone(nnx: Any) -> Any:
    flat = nnx.to_flat_state(_state(nnx))
    reordered = list(reversed(list(flat)))
    return nnx.FlatState.merge(flat) is flat, list(nnx.FlatState.merge(reordered))


def _generic_alias(nnx: Any) -> Any:
    return nnx.State[str, Any]({"a": nnx.Param(jnp.ones(1))})


def _with_empty(operation: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def scenario(nnx: Any) -> Any:
        state = _state(nnx)
        result = operation(state, nnx.State({}))
        return result is state, result

    return scenario


def _merge_state_of_one(nnx: Any) -> Any:
    state = _state(nnx)
    from_dict = nnx.merge_state({"a": nnx.Param(jnp.ones(1))})
    return nnx.merge_state(state) is state, type(from_dict).__name__, from_dict


def _replaced_by_string_int_keys(nnx: Any) -> Any:
    state = nnx.state(nnx.List([nnx.Param(jnp.ones(1)), nnx.Param(jnp.ones(2))]))
    nnx.replace_by_pure_dict(state, {"0": jnp.zeros(1), "1": jnp.full(2, 3.0)})
    return state


FORMS: dict[str, Callable[[Any], Any]] = {
    "a FlatState sliced": _flat_state_sliced,
    "FlatState.merge of one flat state": _flat_state_merged_alone,
    "a State made through State[str, Any]": _generic_alias,
    "a State or-ed with an empty State": _with_empty(lambda a, b: a | b),
    "a State less an empty State": _with_empty(lambda a, b: a - b),
    "merge_state of one State or dict": _merge_state_of_one,
    "replace_by_pure_dict with integer keys as strings": _replaced_by_string_int_keys,
}


@pytest.mark.apis("State", "FlatState", "to_flat_state", "merge_state", "replace_by_pure_dict", "List")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(FORMS))
def test_these_state_forms_give_flax_results(nnx: Any, flax_nnx: Any, case: str) -> None:
    outcome = assert_same(flax_nnx, nnx, FORMS[case], what=case)
    assert outcome.error is None, f"flax takes {case}: {outcome.error!r}"


RENDERED: dict[str, Callable[[Any], Any]] = {
    "a Module's State": _state,
    "a State with nested States": lambda nnx: nnx.State({"a": {"b": nnx.Param(jnp.ones(2)), "c": 1}, "d": {}, "e": 2}),
}


@pytest.mark.apis("State")
@pytest.mark.documented(None)
@pytest.mark.parametrize("case", sorted(RENDERED))
def test_treescope_renders_a_state_as_flax_s(nnx: Any, flax_nnx: Any, case: str) -> None:
    def scenario(nnx: Any) -> str:
        return DocOutputChecker(nnx.__name__).normalize(treescope.render_to_text(RENDERED[case](nnx)))

    outcome = assert_same(flax_nnx, nnx, scenario, what=f"treescope's text of {case}")
    assert outcome.error is None, f"treescope renders {case} on flax: {outcome.error!r}"
