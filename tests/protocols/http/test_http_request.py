"""Building requests from templates: every value rule, without a client."""

from __future__ import annotations

import json

import pytest

from amends_toolkit.http import Param, RequestTemplate
from amends_toolkit.protocols.http import (
    MAX_PATH_DECODINGS,
    MAX_PATH_VALUE_LENGTH,
    InputRefused,
    build_request,
    join_url,
)

TEMPLATE = RequestTemplate(
    method="PUT",
    path="/a/{x}/b/{y}.json",
    params={
        "x": Param(location="path", name="x"),
        "y": Param(location="path", name="y"),
        "q": Param(location="query", name="q[]"),
        "h": Param(location="header", name="X-H"),
    },
    body="payload",
)


def test_values_fill_their_places() -> None:
    wire = build_request(
        TEMPLATE,
        {"x": "é:;%", "y": 3, "q": [1, 2.5, False, "s"], "h": True, "payload": {"a": "ü"}},
        base_url="https://api.example/v1/",
    )
    assert wire.method == "PUT"
    assert wire.url == "https://api.example/v1/a/%C3%A9%3A%3B%25/b/3.json"
    assert wire.query == [("q[]", "1"), ("q[]", "2.5"), ("q[]", "false"), ("q[]", "s")]
    assert wire.headers == [("X-H", "true"), ("Content-Type", "application/json")]
    assert wire.content is not None
    assert json.loads(wire.content) == {"a": "ü"}


def test_a_body_of_null_is_sent_and_a_missing_body_is_not() -> None:
    sent = build_request(TEMPLATE, {"x": "a", "y": "b", "payload": None}, base_url="http://h")
    assert sent.content == b"null"
    absent = build_request(TEMPLATE, {"x": "a", "y": "b"}, base_url="http://h")
    assert absent.content is None
    assert absent.headers == []


@pytest.mark.parametrize(
    ("input", "message"),
    [
        ({"x": "", "y": "b"}, "may not be empty, '.' or '..'"),
        ({"x": ".", "y": "b"}, "one segment of the path"),
        ({"x": "..", "y": "b"}, "one segment of the path"),
        ({"x": "a/b", "y": "b"}, "one segment of the path"),
        ({"y": "b"}, "'x' is required"),
        ({"x": [], "y": "b"}, "may not be an empty list"),
        ({"x": "a", "y": "b", "q": {"k": {"n": 1}}}, "values must be strings"),
        ({"x": "a", "y": "b", "q": [{"k": 1}]}, "not an object"),
        ({"x": "a", "y": "b", "q": [None]}, "not null"),
        ({"x": "a", "y": "b", "q": float("nan")}, "NaN or Infinity"),
        ({"x": "a", "y": "b", "h": "a\r\nb"}, "sent as a header"),
        ({"x": "a", "y": "b", "h": "\x7f"}, "sent as a header"),
        ({"x": "a", "y": "b", "payload": float("inf")}, "NaN or Infinity"),
    ],
)
def test_values_that_break_a_rule_are_refused(input: dict[str, object], message: str) -> None:
    with pytest.raises(InputRefused, match=message):
        build_request(TEMPLATE, input, base_url="http://h")  # type: ignore[arg-type]


def test_a_dot_inside_a_value_is_kept_and_encoded_as_a_segment() -> None:
    wire = build_request(TEMPLATE, {"x": "...", "y": "a..b"}, base_url="http://h")
    assert wire.url == "http://h/a/.../b/a..b.json"


def test_a_path_value_is_decoded_as_often_as_servers_do_and_one_escaped_deeper_is_refused() -> None:
    # "%41" once, twice, three times encoded: "A" after as many decodings, so it stays.
    deepest = "%" + "25" * (MAX_PATH_DECODINGS - 1) + "41"
    wire = build_request(TEMPLATE, {"x": deepest, "y": "b"}, base_url="http://h")
    assert wire.url == "http://h/a/%25" + "25" * (MAX_PATH_DECODINGS - 1) + "41/b/b.json"
    with pytest.raises(InputRefused, match="'x' is one segment of the path"):
        build_request(TEMPLATE, {"x": "%25" + deepest[1:], "y": "b"}, base_url="http://h")
    # A slash as deep as servers decode is found.
    slash = "%" + "25" * (MAX_PATH_DECODINGS - 1) + "2F"
    with pytest.raises(InputRefused, match="'x' is one segment of the path"):
        build_request(TEMPLATE, {"x": slash, "y": "b"}, base_url="http://h")


@pytest.mark.parametrize(
    "value",
    [
        "a" * (MAX_PATH_VALUE_LENGTH + 1),
        ["a" * (MAX_PATH_VALUE_LENGTH // 2), "a" * (MAX_PATH_VALUE_LENGTH // 2 + 1)],
        {"k" * (MAX_PATH_VALUE_LENGTH // 2): "a" * (MAX_PATH_VALUE_LENGTH // 2 + 1)},
        "%25" * (MAX_PATH_VALUE_LENGTH // 3 + 1),
    ],
)
def test_a_path_value_longer_than_the_bound_is_refused(value: object) -> None:
    with pytest.raises(InputRefused, match=f"at most {MAX_PATH_VALUE_LENGTH} characters"):
        build_request(TEMPLATE, {"x": value, "y": "b"}, base_url="http://h")  # type: ignore[dict-item]


def test_a_path_value_as_long_as_the_bound_is_sent() -> None:
    wire = build_request(
        TEMPLATE, {"x": "a" * MAX_PATH_VALUE_LENGTH, "y": "b"}, base_url="http://h"
    )
    assert wire.url == "http://h/a/" + "a" * MAX_PATH_VALUE_LENGTH + "/b/b.json"


def test_the_base_url_keeps_its_path() -> None:
    assert join_url("https://h/api", "/x") == "https://h/api/x"
    assert join_url("https://h/api/", "/x") == "https://h/api/x"
