"""statelib (placeholder: filled in by its area)."""

__all__: list[str] = []
