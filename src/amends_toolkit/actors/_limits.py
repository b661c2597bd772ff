"""Checking the options both MCP sources take (the rules themselves: :mod:`amends_toolkit._options`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amends_toolkit._options import check_counts, check_seconds

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("check_mcp_options",)


def check_mcp_options(
    *,
    timeout: float,
    end_timeout: float,
    max_answer_bytes: int,
    max_depth: int,
    on_list_changed: Callable[[], None] | None,
) -> None:
    """Refuse an option both MCP sources take (``at.mcp.http``, ``at.mcp.stdio``), naming it.

    Raises:
        ValueError: a time that is not a positive number of seconds, a limit that is not a
            positive whole number.
        TypeError: an ``on_list_changed`` that is not a function.
    """
    if on_list_changed is not None and not callable(on_list_changed):
        raise TypeError("on_list_changed must be a function of no arguments, or None")
    check_seconds(timeout=timeout, end_timeout=end_timeout)
    check_counts(max_answer_bytes=max_answer_bytes, max_depth=max_depth)
