"""Checking the limit options of sources, in one place."""

from __future__ import annotations

__all__ = ("check_limits",)


def check_limits(**limits: int) -> None:
    """Refuse a limit option that is not a positive int, naming it.

    Raises:
        ValueError: the option's name and what it must be.
    """
    for option, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{option} must be a positive int, such as {option}=1000")
