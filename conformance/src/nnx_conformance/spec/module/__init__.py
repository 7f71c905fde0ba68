"""Module, Object and Pytree: attributes, flags, views, iteration, sow and capture."""
