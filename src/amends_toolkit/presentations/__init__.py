"""Presentations: a toolkit shown to a model another way (tool search), and what they share."""

from __future__ import annotations

from amends_toolkit.presentations._presentation import call, merge, restrict
from amends_toolkit.presentations._search import tool_search

__all__ = ("call", "merge", "restrict", "tool_search")
