"""Error conditions of filters: values that are not filters, and catch-alls out of place."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.kind("error")


@pytest.mark.apis("filterlib.to_predicate")
@pytest.mark.parametrize("value", [1.5, object(), b"params", 3], ids=["float", "object", "bytes", "int"])
def test_to_predicate_rejects_a_value_that_is_not_a_filter(nnx: Any, value: Any) -> None:
    # A filter is a type, a string tag, a predicate, ..., True, False, None or a
    # list/tuple of filters; anything else has no meaning and must not become a predicate.
    # Only the exception type is checked: flax 0.12.12's own message fails to format for
    # some values (a ValueError/TypeError from its f-string), so no message is common.
    with pytest.raises((TypeError, ValueError)):
        nnx.filterlib.to_predicate(value)


@pytest.mark.apis("Any", "All", "Not")
@pytest.mark.parametrize("combinator", ["Any", "All", "Not"])
def test_combinators_reject_a_value_that_is_not_a_filter(nnx: Any, combinator: str) -> None:
    with pytest.raises((TypeError, ValueError)):
        getattr(nnx, combinator)(1.5)


@pytest.mark.apis("state", "Param")
@pytest.mark.parametrize("catch_all", [..., True], ids=["ellipsis", "true"])
def test_a_catch_all_filter_must_be_the_last_of_several_filters(nnx: Any, catch_all: Any) -> None:
    # Filtering is order-dependent: a catch-all placed before another filter would
    # leave that filter nothing to match.
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"can only be used as the last"):
        nnx.state(model, catch_all, nnx.Param)
