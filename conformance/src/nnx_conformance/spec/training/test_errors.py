"""Error conditions of the training utilities and spmd: missing optimizer arguments,
gradients that do not match the parameters, metric misuse, EMA over non-Variables,
and eager sharding without a mesh."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
import pytest

pytestmark = pytest.mark.kind("error")

optimizer_area = pytest.mark.area("training/optimizer")
metrics_area = pytest.mark.area("training/metrics")
ema_area = pytest.mark.area("training/ema")


def _linear(nnx: Any, use_bias: bool = True) -> Any:
    """A small model with a ``kernel`` (2, 3) and optionally a ``bias`` (3,) Param."""

    class Affine(nnx.Module):
        def __init__(self) -> None:
            self.kernel = nnx.Param(jnp.full((2, 3), 0.5))
            if use_bias:
                self.bias = nnx.Param(jnp.zeros((3,)))

        def __call__(self, x: Any) -> Any:
            y = x @ self.kernel[...]
            return y + self.bias[...] if use_bias else y

    return Affine()


# ---------------------------------------------------------------- optimizer


@optimizer_area
@pytest.mark.apis("Optimizer")
def test_optimizer_requires_the_wrt_filter(nnx: Any) -> None:
    with pytest.raises(TypeError, match=r"Missing required argument `wrt`"):
        nnx.Optimizer(_linear(nnx), optax.sgd(0.1))


@optimizer_area
@pytest.mark.apis("Optimizer")
def test_optimizer_update_requires_both_model_and_grads(nnx: Any) -> None:
    model = _linear(nnx)
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
    with pytest.raises(TypeError, match=r"Missing required argument `grads`"):
        optimizer.update(grads)


@optimizer_area
@pytest.mark.apis("Optimizer", "State")
@pytest.mark.parametrize("keys", [("kernel",), ("bias", "kernel", "extra")], ids=["missing-bias", "extra-param"])
def test_optimizer_update_rejects_grads_whose_structure_differs_from_the_wrt_params(
    nnx: Any, keys: tuple[str, ...]
) -> None:
    model = _linear(nnx)
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    shapes = {"kernel": (2, 3), "bias": (3,), "extra": (3,)}
    grads = nnx.State({k: nnx.Param(jnp.ones(shapes[k])) for k in keys})
    with pytest.raises(ValueError, match=r"pytree structure"):
        optimizer.update(model, grads)


# ---------------------------------------------------------------- metrics


@metrics_area
@pytest.mark.apis("Metric")
def test_the_metric_base_class_cannot_be_instantiated(nnx: Any) -> None:
    with pytest.raises(NotImplementedError, match=r"Must override `__init__\(\)` method"):
        nnx.Metric()


@metrics_area
@pytest.mark.apis("Metric")
@pytest.mark.parametrize("method", ["reset", "update", "compute"])
def test_a_metric_subclass_must_override_reset_update_and_compute(nnx: Any, method: str) -> None:
    class Incomplete(nnx.Metric):
        def __init__(self) -> None:
            pass

    with pytest.raises(NotImplementedError, match=rf"Must override `{method}\(\)` method"):
        getattr(Incomplete(), method)()


@metrics_area
@pytest.mark.apis("metrics")
@pytest.mark.parametrize("metric", ["Average", "Welford"])
def test_update_requires_the_keyword_named_by_argname(nnx: Any, metric: str) -> None:
    m = getattr(nnx.metrics, metric)("loss")
    with pytest.raises(TypeError, match=r"Expected keyword argument 'loss'"):
        m.update(values=jnp.array([1.0, 2.0]))


@metrics_area
@pytest.mark.apis("metrics")
def test_accuracy_requires_int32_labels(nnx: Any) -> None:
    accuracy = nnx.metrics.Accuracy()
    with pytest.raises(ValueError, match=r"Expected labels.dtype==jnp.int32, got float32"):
        accuracy.update(logits=jnp.ones((3, 2)), labels=jnp.ones((3,), jnp.float32))


@metrics_area
@pytest.mark.apis("metrics")
def test_multiclass_accuracy_requires_logits_with_one_more_dimension_than_labels(nnx: Any) -> None:
    accuracy = nnx.metrics.Accuracy()
    with pytest.raises(ValueError, match=r"multi-class.*logits.ndim==labels.ndim\+1, got 2 and 2"):
        accuracy.update(logits=jnp.ones((3, 2)), labels=jnp.ones((3, 2), jnp.int32))


@metrics_area
@pytest.mark.apis("metrics")
def test_binary_accuracy_requires_logits_and_labels_of_the_same_rank(nnx: Any) -> None:
    accuracy = nnx.metrics.Accuracy(threshold=0.5)
    with pytest.raises(ValueError, match=r"binary.*logits.ndim==labels.ndim, got 2 and 1"):
        accuracy.update(logits=jnp.ones((3, 2)), labels=jnp.ones((3,), jnp.int32))


@metrics_area
@pytest.mark.apis("MultiMetric")
def test_multimetric_update_requires_every_metrics_keyword(nnx: Any) -> None:
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average())
    with pytest.raises(TypeError, match=r"Expected keyword argument 'values'"):
        metrics.update(loss=jnp.array([1.0]))


# ---------------------------------------------------------------- ema


@ema_area
@pytest.mark.apis("EMA")
def test_ema_rejects_leaves_that_are_not_variables(nnx: Any) -> None:
    with pytest.raises(TypeError, match=r"EMA only supports Variable leaves.*\['a'\]"):
        nnx.EMA({"a": jnp.ones(2)}, decay=0.5)


@ema_area
@pytest.mark.apis("EMA")
def test_ema_update_rejects_a_tree_of_another_structure(nnx: Any) -> None:
    ema = nnx.EMA(_linear(nnx), decay=0.9)
    with pytest.raises(ValueError, match=r"pytree structure"):
        ema.update(_linear(nnx, use_bias=False))


# ---------------------------------------------------------------- spmd


@pytest.mark.apis("use_eager_sharding", "Variable")
def test_eager_sharding_needs_a_mesh_for_a_sharded_variable(nnx: Any) -> None:
    assert jax.sharding.get_abstract_mesh().empty, "the test expects no mesh to be set"
    with nnx.use_eager_sharding(True), pytest.raises(ValueError, match=r"An auto mesh context or metadata is required"):
        nnx.Param(jnp.ones((2, 4)), out_sharding=("a", None))
