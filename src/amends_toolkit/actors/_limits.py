"""Checking the limit and time options of sources, in one place."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("check_limits", "check_mcp_options", "check_seconds")


def check_limits(**limits: int) -> None:
    """Refuse a limit option that is not a positive int, naming it.

    Raises:
        ValueError: the option's name and what it must be.
    """
    for option, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{option} must be a positive int, such as {option}=1000")


def check_seconds(**options: float) -> None:
    """Refuse a time option that is not a positive, finite number of seconds, naming it.

    Raises:
        ValueError: the option's name, what it must be and the value given.
    """
    for option, value in options.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ValueError(
                f"{option} must be a positive number of seconds, such as {option}=5.0, "
                f"not {value!r}"
            )


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
            positive int.
        TypeError: an ``on_list_changed`` that is not a function.
    """
    if on_list_changed is not None and not callable(on_list_changed):
        raise TypeError("on_list_changed must be a function of no arguments, or None")
    check_seconds(timeout=timeout, end_timeout=end_timeout)
    check_limits(max_answer_bytes=max_answer_bytes, max_depth=max_depth)
