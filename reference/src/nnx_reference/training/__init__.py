"""training: optimizers, metrics, parameter averaging and a functional train state."""

from . import ema as ema
from . import metrics, optimizer
from .ema import EMA
from .metrics import Metric, MultiMetric
from .optimizer import ModelAndOptimizer, OptArray, Optimizer, OptState, OptVariable
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
