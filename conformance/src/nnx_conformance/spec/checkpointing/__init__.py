"""Checkpoints written and restored through orbax."""
