"""Checking a host's options, in one place: one rule and one wording for each kind of value.

=====================================  ===============================================
an option that is                      refused unless it is
=====================================  ===============================================
a time (:func:`check_seconds`)         a positive, finite number of seconds (no bool);
                                       ``None`` too where the option may be unset
a count or size (:func:`check_counts`) a positive whole number (no bool)
a source's name (:func:`check_name`)   a non-empty string
an address (:func:`check_url`)         an absolute ``http://`` or ``https://`` URL
=====================================  ===============================================

Each refusal is a ``ValueError`` that names the option, what it must be with an example, and
the value given, raised when the thing is built (a host's mistake, never a model's result).
"""

from __future__ import annotations

import math
from urllib.parse import SplitResult, urlsplit

__all__ = ("check_counts", "check_name", "check_optional_seconds", "check_seconds", "check_url")


def check_seconds(**options: float) -> None:
    """Refuse a time option that is not a positive, finite number of seconds, naming it.

    Raises:
        ValueError: the option's name, what it must be and the value given.
    """
    for option, value in options.items():
        if not _seconds(value):
            raise ValueError(
                f"{option} must be a positive number of seconds, such as {option}=5.0, "
                f"not {value!r}"
            )


def check_optional_seconds(**options: float | None) -> None:
    """As :func:`check_seconds`, for options that ``None`` leaves unset (no time limit).

    Raises:
        ValueError: the option's name, what it must be and the value given.
    """
    for option, value in options.items():
        if value is not None and not _seconds(value):
            raise ValueError(
                f"{option} must be a positive number of seconds, such as {option}=5.0, or None,"
                f" not {value!r}"
            )


def check_counts(**options: int) -> None:
    """Refuse a count or size option that is not a positive whole number, naming it.

    Raises:
        ValueError: the option's name, what it must be and the value given.
    """
    for option, value in options.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{option} must be a positive whole number, such as {option}=1000, not {value!r}"
            )


def check_name(name: object, example: str) -> None:
    """Refuse a source's name that is not a non-empty string.

    Raises:
        ValueError: what the name must be, with ``example``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, such as name={example!r}, not {name!r}")


def check_url(option: str, url: object, example: str) -> SplitResult:
    """Refuse an address that is not an absolute ``http://`` or ``https://`` URL; the URL's parts.

    Raises:
        ValueError: the option's name, what it must be, with ``example`` (never the value given,
            which may hold a key).
    """
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"{option} must be an absolute http:// or https:// URL, such as {example!r}"
        )
    return parts


def _seconds(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
    )
