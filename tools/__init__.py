"""The project's tools, run from the repository root as ``python -m tools.<name>``."""
