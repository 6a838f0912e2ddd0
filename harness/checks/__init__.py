"""Reusable checks for gates: content rules and citation verification, run as ``python -m``."""
