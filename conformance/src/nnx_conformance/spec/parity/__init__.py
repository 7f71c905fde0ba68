"""Numerical parity with the real flax.nnx (kind "property"), one module per nn page."""
