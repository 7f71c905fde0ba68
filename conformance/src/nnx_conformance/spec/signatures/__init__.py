"""Signature tests (kind "signature"), one module per spec area."""
