"""Training utilities: Optimizer, metrics, EMA and TrainState."""
