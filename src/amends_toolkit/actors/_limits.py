"""Checking the limit and time options of sources, in one place."""

from __future__ import annotations

import math

__all__ = ("check_limits", "check_seconds")


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
