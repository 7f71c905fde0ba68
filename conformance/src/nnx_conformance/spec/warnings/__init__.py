"""Deprecation warnings and no-op capture."""
