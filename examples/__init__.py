"""Runnable examples, each ``python -m examples.<name>`` from the repository's root; not part of the package."""
