"""Parity of the linear layers with flax.nnx: from the same seed and arguments, the same
parameters bit for bit (paths, Variable types, dtypes, values) and the same outputs
within float32 (or bfloat16) rounding; static attributes of flax's types."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given

from nnx_conformance.testing import strategies
from nnx_conformance.testing.assertions import assert_agrees, assert_same
from nnx_conformance.testing.layer_cases import layer_case

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("nn/linear")]


@pytest.mark.apis("Linear")
@given(drawn=strategies.linear_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_linear_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("Linear", drawn, seed, x))


@pytest.mark.apis("LinearGeneral")
@given(drawn=strategies.linear_general_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_linear_general_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("LinearGeneral", drawn, seed, x))


@pytest.mark.apis("Einsum")
@given(drawn=strategies.einsum_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_einsum_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("Einsum", drawn, seed, x))


@pytest.mark.apis("Conv")
@given(drawn=strategies.conv_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_conv_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("Conv", drawn, seed, x))


@pytest.mark.apis("ConvTranspose")
@given(drawn=strategies.conv_args(transpose=True), seed=strategies.seeds, input_seed=strategies.seeds)
def test_conv_transpose_parameters_and_outputs_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    x = strategies.layer_input(drawn.input_shape, input_seed)
    assert_agrees(flax_nnx, nnx, layer_case("ConvTranspose", drawn, seed, x))


@pytest.mark.apis("Embed")
@given(drawn=strategies.embed_args(), seed=strategies.seeds, input_seed=strategies.seeds)
def test_embed_parameters_and_lookups_equal_flax(
    nnx: Any, flax_nnx: Any, drawn: strategies.LayerArgs, seed: int, input_seed: int
) -> None:
    num_embeddings = drawn.args[0]
    ids = np.random.default_rng(input_seed).integers(0, num_embeddings, drawn.input_shape)
    case = layer_case("Embed", drawn, seed, ids)
    assert_agrees(flax_nnx, nnx, case)
    attend = layer_case(
        "Embed",
        drawn,
        seed,
        strategies.layer_input((2, drawn.args[1]), input_seed),
        call=lambda nnx, layer, query: layer.attend(query),
    )
    assert_agrees(flax_nnx, nnx, attend)


@pytest.mark.apis("LinearGeneral")
@pytest.mark.documented(None)
def test_linear_general_keeps_batch_axis_as_flax_keeps_it(nnx: Any, flax_nnx: Any) -> None:
    # a static attribute: in tree mode part of the layer's pytree, compared by type and items
    def scenario(nnx: Any) -> Any:
        layer = nnx.LinearGeneral((2,), (3,), axis=(1,), batch_axis={0: 4}, rngs=nnx.Rngs(0))
        batch_axis = layer.batch_axis
        same = type(batch_axis)({0: 4})
        equal, same_hash = batch_axis == {0: 4}, hash(batch_axis) == hash(same)
        return batch_axis, repr(batch_axis), equal, same_hash, jax.tree.leaves(batch_axis)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Embed")
@pytest.mark.parametrize("spec", [("x", None), (None, "x"), None], ids=["rows", "columns", "none"])
def test_embed_attend_puts_its_logits_on_the_out_sharding_it_is_given_as_flax(
    nnx: Any, flax_nnx: Any, spec: tuple[str | None, ...] | None
) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,), devices=jax.devices()[:1])
        with jax.set_mesh(mesh):
            embed = nnx.Embed(5, 3, rngs=nnx.Rngs(0))
            sharding = None if spec is None else jax.sharding.PartitionSpec(*spec)
            logits = embed.attend(strategies.layer_input((2, 3), 0), out_sharding=sharding)
            return logits, str(logits.sharding.spec)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to attend with out_sharding={spec}: {outcome.error!r}"


@pytest.mark.apis("Embed")
@pytest.mark.documented(None)
@pytest.mark.parametrize("spec", [("x", None, None), (None, None, "x")], ids=["batch", "features"])
def test_embed_puts_its_embeddings_on_the_out_sharding_it_is_given_as_flax(
    nnx: Any, flax_nnx: Any, spec: tuple[str | None, ...]
) -> None:
    def scenario(nnx: Any) -> Any:
        mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,), devices=jax.devices()[:1])
        with jax.set_mesh(mesh):
            embed = nnx.Embed(5, 3, rngs=nnx.Rngs(0))
            out = embed(np.array([[0, 4, 2], [1, 1, 3]]), out_sharding=jax.sharding.PartitionSpec(*spec))
            return out, str(out.sharding.spec)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax failed to embed with out_sharding={spec}: {outcome.error!r}"


@pytest.mark.apis("Embed")
@pytest.mark.documented(None)
@pytest.mark.parametrize("num_embeddings", [1, 2])
def test_embed_gradients_over_many_lookups_equal_flax_bit_for_bit(nnx: Any, flax_nnx: Any, num_embeddings: int) -> None:
    """Summed over many lookups of few rows, the embedding's gradient has flax's bits (a
    table of one row is broadcast there, its gradient a sum in another order than a gather's)."""

    def scenario(nnx: Any) -> Any:
        layer = nnx.Embed(num_embeddings, 3, rngs=nnx.Rngs(0))
        ids = np.random.default_rng(1).integers(0, num_embeddings, (97, 13))
        weights = strategies.layer_input((97, 13, 3), 2)
        grads = nnx.grad(lambda m: (m(ids) * weights).sum())(layer)
        return np.asarray(grads["embedding"][...]).tobytes().hex()

    assert_same(flax_nnx, nnx, scenario)
