"""Differential tests against the real flax.nnx (kind "differential"), one module per spec area."""
