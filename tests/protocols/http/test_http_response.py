"""What an answer's status, Retry-After and body mean, without a client."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from amends_toolkit.protocols.http import (
    BoundedText,
    UnreadableAnswer,
    charset,
    is_json,
    outcome,
    parse_answer,
    retry_after,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, "success"),
        (201, "success"),
        (204, "success"),
        (299, "success"),
        (401, "authentication"),
        (403, "authentication"),
        (408, "unavailable"),
        (429, "unavailable"),
        (500, "unavailable"),
        (503, "unavailable"),
        (599, "unavailable"),
        (400, "failed"),
        (404, "failed"),
        (409, "failed"),
        (422, "failed"),
        (301, "unexpected"),
        (304, "unexpected"),
        (101, "unexpected"),
    ],
)
def test_each_status_has_its_outcome(status: int, expected: str) -> None:
    assert outcome(status) == expected


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Mon, 30 Nov 2026 12:01:30 GMT", 90.0),
        ("Monday, 30-Nov-26 12:00:10 GMT", 10.0),
        ("Sun Nov 30 12:00:05 2026", 5.0),
        ("Mon, 30 Nov 2026 11:00:00 GMT", 0.0),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("٣", None),
    ],
)
def test_retry_after_is_seconds_or_an_http_date(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 30 Nov 2026 12:01:59 GMT",
        "Mon, 30 Nov 2026 12:01:59 -0000",
        "Mon Nov 30 12:01:59 2026",
    ],
)
def test_an_http_date_is_gmt_whatever_the_machines_zone(machine_zone: str, value: str) -> None:
    assert time.localtime(0).tm_zone == ("UTC" if machine_zone == "UTC" else "EST")
    assert retry_after(value, now=NOW) == 119.0


def test_a_delay_of_more_digits_than_a_number_of_seconds_has_is_none() -> None:
    assert retry_after("9" * 10, now=NOW) == 9_999_999_999.0
    assert retry_after("9" * 5000, now=NOW) is None


def test_json_content_types_and_charsets_are_recognised() -> None:
    assert is_json("application/json")
    assert is_json("Application/JSON; charset=utf-8")
    assert is_json("application/vnd.api+json")
    assert not is_json("text/json-ish")
    assert not is_json(None)
    assert charset("text/plain; charset=ISO-8859-1") == "iso8859-1"
    assert charset('text/plain; charset="utf-16"') == "utf-16"
    assert charset("text/plain; charset=nonsense") == "utf-8"
    assert charset(None) == "utf-8"


def test_a_body_is_read_only_until_it_is_too_long() -> None:
    text = BoundedText(limit=3)
    assert text.feed("é".encode()[:1])
    assert text.feed("é".encode()[1:] + b"ab")
    assert not text.feed(b"cd")
    assert text.text == "éabcd"
    exact = BoundedText(limit=2)
    assert exact.feed(b"ab")
    assert exact.close()
    broken = BoundedText(limit=10)
    broken.feed(b"\xff")
    assert broken.undecodable


def test_an_answer_is_json_text_or_null() -> None:
    assert parse_answer("application/json", '{"a": 1}') == {"a": 1}
    assert parse_answer("text/plain", '{"a": 1}') == '{"a": 1}'
    assert parse_answer("application/json", "") is None
    with pytest.raises(UnreadableAnswer):
        parse_answer("application/json", "{")
