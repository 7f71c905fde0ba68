"""Error conditions of State: non-exhaustive splits, unknown keys and pure-dict mismatches."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("error")


def _state(nnx: Any) -> Any:
    return nnx.State(
        {"kernel": nnx.Param(jnp.ones((2, 3))), "bias": nnx.Param(jnp.zeros(3)), "mean": nnx.BatchStat(jnp.zeros(3))}
    )


@pytest.mark.apis("split_state", "State")
def test_split_state_with_filters_that_leave_a_leaf_unmatched_raises(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"(?s)Non-exhaustive filters, got a non-empty remainder.*'mean'"):
        nnx.split_state(_state(nnx), nnx.Param)


@pytest.mark.apis("State")
def test_state_split_method_with_filters_that_leave_a_leaf_unmatched_raises(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"(?s)Non-exhaustive filters, got a non-empty remainder.*'mean'"):
        _state(nnx).split(nnx.Param)


@pytest.mark.apis("filter_state", "State")
def test_filter_state_drops_unmatched_leaves_instead_of_raising(nnx: Any) -> None:
    params = nnx.filter_state(_state(nnx), nnx.Param)
    assert sorted(params.keys()) == ["bias", "kernel"], f"expected only the Params, got {sorted(params.keys())}"


@pytest.mark.apis("State")
def test_reading_a_missing_key_as_an_attribute_raises_attribute_error(nnx: Any) -> None:
    with pytest.raises(AttributeError, match=r"No attribute 'missing' in State"):
        _ = _state(nnx).missing


@pytest.mark.apis("State")
def test_reading_a_missing_key_by_index_raises_key_error(nnx: Any) -> None:
    with pytest.raises(KeyError, match=r"missing"):
        _state(nnx)["missing"]


@pytest.mark.apis("replace_by_pure_dict", "State")
def test_replace_by_pure_dict_rejects_a_key_the_state_does_not_have(nnx: Any) -> None:
    with pytest.raises(ValueError, match=r"key in pure_dict not available in state: \('missing',\)"):
        nnx.replace_by_pure_dict(_state(nnx), {"missing": jnp.ones(3)})


@pytest.mark.apis("traversals.unflatten_mapping")
@pytest.mark.documented(None)
def test_unflatten_mapping_of_what_is_no_mapping_nor_iterable_raises_flax_error(nnx: Any, flax_nnx: Any) -> None:
    outcome = assert_same(flax_nnx, nnx, lambda nnx: nnx.traversals.unflatten_mapping(5), mentions=("int",))
    assert outcome.error is not None, "flax refuses to unflatten an int"
