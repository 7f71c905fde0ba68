"""Metrics: Pytrees that accumulate statistics in ``MetricState`` Variables.

Every metric has ``update(**kwargs)`` (accumulate a batch), ``compute()`` (the
current value) and ``reset()`` (back to the empty state); all update in place,
so metrics can be passed through ``nnx.jit`` like any other Pytree.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
import jax.numpy as jnp

from .. import filterlib, graphlib
from ..pytreelib import Pytree
from ..variablelib import Variable


class MetricState(Variable):
    """Wrapper class for Metric Variables."""


class Metric(Pytree):
    """Base class for metrics. Any class that subclasses ``Metric`` should
    implement a ``compute``, ``reset`` and ``update`` method."""

    def __init__(self) -> None:
        raise NotImplementedError("Must override `__init__()` method.")

    def reset(self) -> None:
        """In-place reset the ``Metric``."""
        raise NotImplementedError("Must override `reset()` method.")

    def update(self, **kwargs: tp.Any) -> None:
        """In-place update the ``Metric``."""
        raise NotImplementedError("Must override `update()` method.")

    def compute(self) -> tp.Any:
        """Compute and return the value of the ``Metric``."""
        raise NotImplementedError("Must override `compute()` method.")

    def split(self, *filters: filterlib.Filter) -> tuple[tp.Any, ...]:
        """``nnx.split`` of this metric: its graphdef and its state (one per filter)."""
        return graphlib.split(self, *filters)


def _argument(kwargs: dict[str, tp.Any], argname: str) -> tp.Any:
    """The keyword argument a metric reads its batch from, as given."""
    if argname not in kwargs:
        raise TypeError(f"Expected keyword argument '{argname}'")
    return kwargs[argname]


def _as_array(values: tp.Any) -> tp.Any:
    """A Python number as an array; anything else as given (the metrics take arrays only,
    as flax's: another value fails on the first array attribute read)."""
    return jnp.asarray(values) if isinstance(values, (int, float)) else values


class Average(Metric):
    """Average metric: the running mean of every value passed to ``update``."""

    def __init__(self, argname: str = "values") -> None:
        """``argname`` is the keyword argument ``update`` reads its values from."""
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        """Reset this ``Metric``."""
        self.total.set_value(jnp.array(0, dtype=jnp.float32))
        self.count.set_value(jnp.array(0, dtype=jnp.int32))

    def update(self, mask: jax.Array | None = None, **kwargs: tp.Any) -> None:
        """Adds ``kwargs[argname]`` (an array, or a Python number when there is no mask)
        to the average; ``mask`` (an array broadcastable to the values) excludes entries:
        the values are multiplied by it and the count grows by its sum."""
        values = _argument(kwargs, self.argname)
        if mask is not None and isinstance(values, (int, float)):
            raise ValueError("If mask is provided, values should be a jax array")
        values = _as_array(values)
        if mask is None:
            total, count = values.sum(), values.size
        else:  # arrays only, as flax's; the product in the dtype ``values * mask`` has, as documented
            product_dtype = jnp.promote_types(values.dtype, mask.dtype)
            total, count = (values * mask.astype(product_dtype)).sum(), mask.sum()
        self.total[...] += total
        self.count[...] = (self.count[...] + count).astype(self.count.dtype)  # a fractional mask's sum truncated

    def compute(self) -> jax.Array:
        """Compute and return the average."""
        return self.total[...] / self.count[...]


class Accuracy(Average):
    """Accuracy metric: the fraction of predictions (argmax of ``logits``, or
    ``logits >= threshold`` for binary classification) that match ``labels``."""

    def __init__(self, threshold: float | None = None, *args: tp.Any, **kwargs: tp.Any) -> None:
        """``threshold`` (a Python float) switches to binary classification; the rest goes to Average."""
        if threshold is not None and not isinstance(threshold, float):
            raise TypeError(f"Expected threshold to be a float, got {type(threshold)}")
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def update(  # type: ignore[override]
        self,
        *,
        logits: jax.Array,
        labels: jax.Array,
        mask: jax.Array | None = None,
        **_: tp.Any,
    ) -> None:
        """In-place update this ``Metric`` with a batch of predictions and labels."""
        if labels.dtype == jnp.int64:  # what JAX makes of int32 labels with x64 enabled
            labels = labels.astype(jnp.int32)
        if labels.dtype != jnp.int32:
            raise ValueError(f"Expected labels.dtype==jnp.int32, got {labels.dtype}")
        if self.threshold is None:
            if logits.ndim != labels.ndim + 1:
                raise ValueError(
                    "For multi-class classification, expected logits.ndim==labels.ndim+1, "
                    f"got {logits.ndim} and {labels.ndim}"
                )
            correct = logits.argmax(axis=-1) == labels
        else:
            if logits.ndim != labels.ndim:
                raise ValueError(
                    f"For binary classification, expected logits.ndim==labels.ndim, got {logits.ndim} and {labels.ndim}"
                )
            correct = (logits >= self.threshold) == labels.astype(bool)
        super().update(mask=mask, **{self.argname: correct})


@dataclasses.dataclass
class Statistics:
    """The mean and spread that ``Welford.compute`` returns (a pytree)."""

    mean: jax.Array
    standard_error_of_mean: jax.Array
    standard_deviation: jax.Array


jax.tree_util.register_dataclass(
    Statistics,
    data_fields=["mean", "standard_error_of_mean", "standard_deviation"],
    meta_fields=[],
)


class Welford(Metric):
    """Uses Welford's algorithm to compute the mean and variance of a stream of data."""

    def __init__(self, argname: str = "values") -> None:
        """``argname`` is the keyword argument ``update`` reads its values from."""
        self.argname = argname
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))
        self.mean = MetricState(jnp.array(0, dtype=jnp.float32))
        self.m2 = MetricState(jnp.array(0, dtype=jnp.float32))

    def reset(self) -> None:
        """Reset this ``Metric``."""
        self.count.set_value(jnp.array(0, dtype=jnp.int32))
        self.mean.set_value(jnp.array(0, dtype=jnp.float32))
        self.m2.set_value(jnp.array(0, dtype=jnp.float32))

    def update(self, **kwargs: tp.Any) -> None:
        """Merges the batch ``kwargs[argname]`` (all its entries) into the statistics."""
        values = _as_array(_argument(kwargs, self.argname)).ravel()
        count = self.count[...]
        batch_count = values.size
        batch_mean = values.mean()
        batch_m2 = values.var() * batch_count  # flax's bits: the variance times the count
        new_count = count + batch_count
        delta = batch_mean - self.mean[...]
        self.mean[...] = self.mean[...] + delta * batch_count / new_count
        self.m2[...] = self.m2[...] + (batch_m2 + delta**2 * count * batch_count / new_count)
        self.count[...] = new_count

    def compute(self) -> Statistics:
        """Compute and return the mean and variance statistics in a
        ``Statistics`` dataclass object."""
        count = self.count[...]
        variance = self.m2[...] / count
        standard_deviation = jnp.sqrt(variance)
        return Statistics(
            mean=self.mean[...],
            standard_error_of_mean=standard_deviation / jnp.sqrt(count),
            standard_deviation=standard_deviation,
        )


class MultiMetric(Metric):
    """Holds several metrics by name and updates them all with a single call."""

    def __init__(self, **metrics: Metric) -> None:
        """``MultiMetric(name=metric, ...)``: each metric is an attribute ``name``."""
        self._metric_names = tuple(metrics)
        for name, metric in metrics.items():
            setattr(self, name, metric)

    def reset(self) -> None:
        """Reset all underlying ``Metric``'s."""
        for name in self._metric_names:
            getattr(self, name).reset()

    def update(self, **updates: tp.Any) -> None:
        """Passes ``updates`` to every metric's ``update``. A ``mask`` entry is either
        one array for all metrics or a dict ``{metric_name: mask}``."""
        mask = updates.pop("mask", None)
        for name in self._metric_names:
            metric_mask = mask.get(name) if isinstance(mask, dict) else mask
            if metric_mask is None:
                getattr(self, name).update(**updates)
            else:
                getattr(self, name).update(mask=metric_mask, **updates)

    def compute(self) -> dict[str, tp.Any]:
        """The value of every metric, by name."""
        return {name: getattr(self, name).compute() for name in self._metric_names}
