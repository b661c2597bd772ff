"""The catalog's JSON: ``dump`` a definition, an operation or a decision, ``load`` it back."""

from __future__ import annotations

from amends_toolkit._catalog import dump, load, register

__all__ = ("dump", "load", "register")
