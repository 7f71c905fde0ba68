"""training: optimizers, metrics, parameter averaging and a functional train state."""

from . import ema as ema, metrics, optimizer
from .ema import EMA
from .metrics import Metric, MultiMetric
from .optimizer import ModelAndOptimizer, OptArray, OptState, OptVariable, Optimizer
from .train_state import TrainState

__all__ = [
    "EMA",
    "Metric",
    "ModelAndOptimizer",
    "MultiMetric",
    "OptArray",
    "OptState",
    "OptVariable",
    "Optimizer",
    "TrainState",
    "metrics",
    "optimizer",
]
