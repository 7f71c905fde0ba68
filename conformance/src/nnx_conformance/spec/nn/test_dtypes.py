"""Differential tests of ``nnx.nn.dtypes``: the dtype ``canonicalize_dtype`` infers or checks,
and the arrays ``promote_dtype`` casts, for drawn argument dtypes, overrides and ``inexact``."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/dtypes")]

DTYPES = [jnp.int8, jnp.int32, jnp.uint8, jnp.bool_, jnp.float16, jnp.bfloat16, jnp.float32, jnp.complex64]
DOC = "api nn/dtypes page: canonicalize_dtype and promote_dtype (inferred dtype, override, inexact)"

arguments = st.lists(st.sampled_from([None, *DTYPES]), min_size=1, max_size=3)
overrides = st.sampled_from([None, *DTYPES])
inexact_flags = st.sampled_from([True, False, None])
"""``inexact`` given as True or False, or left out (None) to take its default."""


def _inexact(inexact: bool | None) -> dict[str, bool]:
    return {} if inexact is None else {"inexact": inexact}


def _args(dtypes: list[Any]) -> tuple[Any, ...]:
    return tuple(None if d is None else jnp.arange(3).astype(d) for d in dtypes)


@pytest.mark.apis("nn.dtypes.canonicalize_dtype")
@pytest.mark.documented(DOC)
@given(dtypes=arguments, dtype=overrides, inexact=inexact_flags)
def test_canonicalize_dtype_gives_flax_dtype(
    nnx: Any, flax_nnx: Any, dtypes: list[Any], dtype: Any, inexact: bool | None
) -> None:
    assert_same(
        flax_nnx, nnx, lambda nnx: nnx.nn.dtypes.canonicalize_dtype(*_args(dtypes), dtype=dtype, **_inexact(inexact))
    )


@pytest.mark.apis("nn.dtypes.promote_dtype")
@pytest.mark.documented(DOC)
@given(dtypes=arguments, dtype=overrides, inexact=inexact_flags)
def test_promote_dtype_casts_as_flax(
    nnx: Any, flax_nnx: Any, dtypes: list[Any], dtype: Any, inexact: bool | None
) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: nnx.nn.dtypes.promote_dtype(_args(dtypes), dtype=dtype, **_inexact(inexact)))
