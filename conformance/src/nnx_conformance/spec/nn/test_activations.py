"""Differential tests of the activation functions: flax's values and gradients, bit for
bit, over float32, bfloat16 and float16 inputs and every documented keyword."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/activations")]

ELEMENTWISE = (
    "celu",
    "elu",
    "gelu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "leaky_relu",
    "log_sigmoid",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softplus",
    "swish",
    "tanh",
)
"""Activations of one array, applied entry by entry."""

KEYWORDS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "celu": st.fixed_dictionaries({}, optional={"alpha": st.sampled_from([0.5, 2.0])}),
    "elu": st.fixed_dictionaries({}, optional={"alpha": st.sampled_from([0.5, 2.0])}),
    "gelu": st.fixed_dictionaries({}, optional={"approximate": st.booleans()}),
    "leaky_relu": st.fixed_dictionaries({}, optional={"negative_slope": st.sampled_from([0.01, 0.3])}),
    "glu": st.fixed_dictionaries({}, optional={"axis": st.sampled_from([-1, 0])}),
    "softmax": st.fixed_dictionaries({}, optional={"axis": st.sampled_from([-1, 0, (0, 1)])}),
    "log_softmax": st.fixed_dictionaries({}, optional={"axis": st.sampled_from([-1, 0, (0, 1)])}),
    "logsumexp": st.fixed_dictionaries(
        {}, optional={"axis": st.sampled_from([None, -1, 0]), "keepdims": st.booleans()}
    ),
    "standardize": st.fixed_dictionaries(
        {}, optional={"axis": st.sampled_from([-1, 0]), "epsilon": st.sampled_from([1e-5, 1e-2])}
    ),
}
"""The keywords each activation documents, drawn (an activation not named takes none)."""

ACTIVATIONS = (*ELEMENTWISE, "glu", "softmax", "log_softmax", "logsumexp", "standardize")


@pytest.mark.apis(*ACTIVATIONS)
@given(
    name=st.sampled_from(ACTIVATIONS),
    data=st.data(),
    shape=st.sampled_from([(4,), (2, 4), (2, 2, 4)]),
    dtype=st.sampled_from(strategies.LAYER_DTYPES),
    seed=strategies.seeds,
)
def test_activation_values_and_gradients_equal_flax(
    nnx: Any, flax_nnx: Any, name: str, data: st.DataObject, shape: tuple[int, ...], dtype: Any, seed: int
) -> None:
    keywords = data.draw(KEYWORDS.get(name, st.just({})), label="keywords")
    x = jnp.asarray(3 * np.random.default_rng(seed).standard_normal(shape, dtype=np.float32), dtype)

    def scenario(nnx: Any) -> Any:
        fn = getattr(nnx, name)
        return fn(x, **keywords), jax.grad(lambda x: jnp.sum(fn(x, **keywords).astype(jnp.float32)))(x)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("one_hot")
@given(
    num_classes=st.integers(1, 4),
    axis=st.sampled_from([-1, 0]),
    dtype=st.sampled_from([jnp.float32, jnp.int32]),
    seed=strategies.seeds,
)
def test_one_hot_equals_flax(nnx: Any, flax_nnx: Any, num_classes: int, axis: int, dtype: Any, seed: int) -> None:
    labels = np.random.default_rng(seed).integers(-1, num_classes + 1, (2, 3))
    assert_same(flax_nnx, nnx, lambda nnx: nnx.one_hot(labels, num_classes, axis=axis, dtype=dtype))
