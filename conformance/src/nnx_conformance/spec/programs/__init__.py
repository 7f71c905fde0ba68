"""Random multi-step programs and whole training runs compared with flax.nnx."""
