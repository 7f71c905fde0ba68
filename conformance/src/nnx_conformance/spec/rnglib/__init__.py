"""Rngs and RngStream: key derivation, counts, fork, split and reseed."""
