"""Reading YAML or JSON text and files into the JSON values ``read_operations`` takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import amends_toolkit as at

if TYPE_CHECKING:
    from pathlib import Path

YAML = """
openapi: 3.0.0
info: {title: t, version: 1.0}
x-released: 2024-01-31
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        200: {description: ok}
        default: {description: error}
      x-flags: {yes: 1, null: 2, 1.5: 3}
"""


def test_yaml_is_read_as_json_would_have_it() -> None:
    value = at.openapi.parse_document(YAML)
    assert isinstance(value, dict)
    assert value["x-released"] == "2024-01-31"
    assert value["info"] == {"title": "t", "version": 1.0}
    operation: Any = value["paths"]["/pets"]["get"]  # type: ignore[index,call-overload]
    assert list(operation["responses"]) == ["200", "default"]
    assert list(operation["x-flags"]) == ["true", "null", "1.5"]
    assert [op.definition.name for op in at.openapi.read_operations(value).operations] == [
        "listPets"
    ]


def test_json_text_and_bytes_are_read() -> None:
    assert at.openapi.parse_document('{"openapi": "3.1.0"}') == {"openapi": "3.1.0"}
    assert at.openapi.parse_document(b'\xef\xbb\xbf{"a": [1]}') == {"a": [1]}


def test_a_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "api.yaml"
    path.write_text(YAML, encoding="utf-8")
    assert at.openapi.read_document(path) == at.openapi.parse_document(YAML)
    assert at.openapi.read_document(str(path)) == at.openapi.parse_document(YAML)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2", "neither JSON nor YAML"),
        ("a: &x [*x]", "alias that contains itself"),
        (b"\xff\xfe\x00", "not UTF-8"),
        ("a: !!python/object:os.system {}", "neither JSON nor YAML"),
    ],
)
def test_text_that_is_no_document_is_a_document_error(text: str | bytes, message: str) -> None:
    with pytest.raises(at.openapi.DocumentError, match=message):
        at.openapi.parse_document(text)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("openapi: [3.0\n", "did not find expected ',' or ']' at line 2, column 1"),
        ("a: b: c\n", "mapping values are not allowed in this context at line 1, column 5"),
    ],
)
def test_a_yaml_mistake_is_told_in_one_line_with_where_it_is(text: str, told: str) -> None:
    # issue 32: PyYAML's own text is up to four lines, each naming "<unicode string>"; the
    # command's error is one line
    with pytest.raises(at.openapi.DocumentError) as caught:
        at.openapi.parse_document(text)
    assert str(caught.value) == f"the document is neither JSON nor YAML: {told}"


def test_the_public_surface_of_at_openapi_is_pinned() -> None:
    assert at.openapi.__all__ == (
        "DocumentError",
        "ReadResult",
        "SkipReason",
        "Skipped",
        "parse_document",
        "read_document",
        "read_operations",
    )
    assert "openapi" in at.__all__
