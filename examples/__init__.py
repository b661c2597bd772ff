"""Runnable examples: ``python -m examples.<name>`` from the repository's root (no part of
the package)."""
