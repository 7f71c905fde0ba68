"""Property-based tests (kind "property"), one module per spec area."""
