"""Training arguments: the optax transforms that differential tests drive an Optimizer with."""

from __future__ import annotations

from collections.abc import Callable

import optax

OPTAX_TRANSFORMS: dict[str, Callable[[], optax.GradientTransformation]] = {
    "sgd": lambda: optax.sgd(0.1),
    "sgd with nesterov momentum": lambda: optax.sgd(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: optax.adam(0.01),
    "adamw": lambda: optax.adamw(0.01, weight_decay=0.1),
    "adabelief": lambda: optax.adabelief(0.01),
    "adafactor": lambda: optax.adafactor(0.01),
    "adagrad": lambda: optax.adagrad(0.1),
    "lamb": lambda: optax.lamb(0.01),
    "lars": lambda: optax.lars(0.01),
    "lion": lambda: optax.lion(0.01),
    "novograd": lambda: optax.novograd(0.01),
    "rmsprop": lambda: optax.rmsprop(0.01),
    "yogi": lambda: optax.yogi(0.01),
    "clipped adam (a chain)": lambda: optax.chain(optax.clip_by_global_norm(0.5), optax.adam(0.01)),
    "adam with injected hyperparameters": lambda: optax.inject_hyperparams(optax.adam)(learning_rate=0.01),
    "adam with a schedule": lambda: optax.adam(optax.exponential_decay(0.01, 1, 0.5)),
    "gradient accumulation (MultiSteps)": lambda: optax.MultiSteps(optax.sgd(0.1), every_k_schedule=2),
}
"""One transform of each optax family, by name: plain, momentum, adaptive, factored,
layer-wise, sign-based, chained, with hyperparameters as state, scheduled, accumulating."""
