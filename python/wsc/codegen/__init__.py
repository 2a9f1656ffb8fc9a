"""Hopper code generation helpers (being written)."""
