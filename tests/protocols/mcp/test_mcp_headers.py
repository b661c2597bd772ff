from __future__ import annotations

import pytest

from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit.protocols.mcp._headers import (
    HeaderMark,
    InvalidMarks,
    encode_value,
    param_headers,
    read_marks,
    render_value,
)


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
        ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
        ("\tindented", "=?base64?CWluZGVudGVk?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("日本語", "=?base64?5pel5pys6Kqe?="),
        ("a\tb", "=?base64?YQli?="),
    ],
)
def test_values_a_header_cannot_hold_go_as_base64(value: str, header: str) -> None:
    assert encode_value(value) == header


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (-7, "-7"),
        (42.0, "42"),
        ("s", "s"),
        (None, None),
        (1.5, None),
        ([1], None),
        ({"a": 1}, None),
        (2**53, None),
    ],
)
def test_arguments_render_as_header_text(value: JsonValue, text: str | None) -> None:
    assert render_value(value) == text


def test_marks_are_read_in_schema_order_through_nested_properties() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "o": {
                "type": "object",
                "properties": {"b": {"type": "integer", "x-mcp-header": "B-2"}},
            },
            "c": {"type": "boolean", "x-mcp-header": "c.x"},
            "d": {"type": "string", "default": {"x-mcp-header": "ignored"}},
        },
    }
    assert read_marks(schema) == (
        HeaderMark(path=("a",), token="A", type="string"),
        HeaderMark(path=("o", "b"), token="B-2", type="integer"),
        HeaderMark(path=("c",), token="c.x", type="boolean"),
    )


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "number", "x-mcp-header": "N"},
        {"type": "object", "x-mcp-header": "O"},
        {"type": ["string", "null"], "x-mcp-header": "T"},
        {"x-mcp-header": "T"},
        {"type": "string", "x-mcp-header": ""},
        {"type": "string", "x-mcp-header": "a b"},
        {"type": "string", "x-mcp-header": "ü"},
    ],
)
def test_a_mark_the_spec_forbids_is_invalid(prop: JsonObject) -> None:
    with pytest.raises(InvalidMarks, match="'p'"):
        read_marks({"type": "object", "properties": {"p": prop}})


def test_marks_repeated_without_regard_to_case_are_invalid() -> None:
    with pytest.raises(InvalidMarks, match="repeats"):
        read_marks(
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "X"},
                    "b": {"type": "string", "x-mcp-header": "x"},
                }
            }
        )


@pytest.mark.parametrize("keyword", ["items", "not", "additionalProperties", "if"])
def test_a_mark_under_another_keyword_than_properties_is_invalid(keyword: str) -> None:
    with pytest.raises(InvalidMarks, match="not reached"):
        read_marks({"properties": {"a": {keyword: {"type": "string", "x-mcp-header": "X"}}}})


def test_param_headers_skip_absent_and_null_arguments() -> None:
    marks = (
        HeaderMark(path=("a",), token="A", type="string"),
        HeaderMark(path=("o", "b"), token="B", type="integer"),
    )
    assert param_headers(marks, {"a": None, "o": {"b": 3}}) == {"Mcp-Param-B": "3"}
    assert param_headers(marks, {"o": "not an object"}) == {}
