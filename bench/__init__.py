"""Benchmarks: ``python -m bench`` runs them all and writes RESULTS.md (see __main__.py)."""
