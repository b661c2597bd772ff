from __future__ import annotations

import logging

import pytest

from amends_toolkit import JsonObject
from amends_toolkit.runtime import validator_for

SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "pattern": "^[A-Z]", "format": "email"},
        "count": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title"],
    "additionalProperties": False,
}


def test_an_input_that_fits_passes() -> None:
    assert validator_for(SCHEMA).check({"title": "Hi", "count": 2, "tags": ["a"]}) is None


@pytest.mark.parametrize("value", [None, "text", 3, [1], True])
def test_an_input_must_be_an_object(value: object) -> None:
    message = validator_for(SCHEMA).check(value)  # type: ignore[arg-type]
    assert message is not None
    assert message.startswith("The input must be a JSON object")


def test_a_closed_schema_refuses_a_property_it_does_not_name() -> None:
    message = validator_for(SCHEMA).check({"title": "x", "colour": "red"})
    assert message is not None
    assert "colour" in message


def test_the_message_names_the_property_and_what_was_expected() -> None:
    message = validator_for(SCHEMA).check({"count": "two"})
    assert message is not None
    assert '"title" is a required property' in message
    assert "at 'count'" in message
    assert "integer" in message


def test_a_pattern_and_a_format_are_not_checked() -> None:
    assert validator_for(SCHEMA).check({"title": "lowercase, not an email"}) is None


def test_a_reference_is_never_fetched_and_such_a_schema_holds_only_to_an_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    schema: JsonObject = {
        "type": "object",
        "properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}},
    }
    validator = validator_for(schema, tool="remote")
    assert validator.check({"a": "anything"}) is None
    assert validator.check("not an object") is not None
    assert [r.getMessage() for r in caplog.records if "schema.unchecked" in r.getMessage()]


def test_one_validator_is_shared_by_equal_schemas() -> None:
    assert validator_for(dict(SCHEMA)) is validator_for(dict(SCHEMA))


def test_an_open_schema_takes_any_property() -> None:
    assert validator_for({"type": "object"}).check({"anything": [1, {"x": None}]}) is None
