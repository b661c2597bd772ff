from __future__ import annotations

import math

import pytest

from amends_toolkit._options import (
    check_counts,
    check_name,
    check_optional_seconds,
    check_seconds,
    check_url,
)


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "5", None])
def test_a_time_is_a_positive_finite_number_of_seconds(value: object) -> None:
    with pytest.raises(ValueError, match=r"^grace must be a positive number of seconds, such as"):
        check_seconds(grace=value)  # type: ignore[arg-type]


def test_an_optional_time_may_be_none_and_is_otherwise_a_time() -> None:
    check_optional_seconds(timeout=None)
    check_optional_seconds(timeout=0.5)
    with pytest.raises(ValueError, match=r"timeout=5.0, or None, not 0$"):
        check_optional_seconds(timeout=0)


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "10", None])
def test_a_count_is_a_positive_whole_number(value: object) -> None:
    with pytest.raises(ValueError, match=r"^page_size must be a positive whole number, such as"):
        check_counts(page_size=value)  # type: ignore[arg-type]
    check_counts(page_size=1)


@pytest.mark.parametrize("name", ["", None, 3])
def test_a_name_is_a_non_empty_string(name: object) -> None:
    with pytest.raises(ValueError, match="name must be a non-empty string, such as name='tasks'"):
        check_name(name, "tasks")


@pytest.mark.parametrize(
    "url", ["ftp://x/?key=sk-9", "/relative?key=sk-9", "http://?key=sk-9", None, "https//sk-9"]
)
def test_an_address_is_absolute_http_and_the_refusal_does_not_repeat_it(url: object) -> None:
    with pytest.raises(ValueError, match="url must be an absolute http") as refused:
        check_url("url", url, "https://example.com/mcp")
    assert "sk-9" not in str(refused.value)
    assert check_url("url", "https://h/mcp?key=1", "x").netloc == "h"
