"""The public surface: every name of flax.nnx with a compatible kind and signature."""
