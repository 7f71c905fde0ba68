"""Documented error conditions (kind "error"), one module per spec area."""
