"""Input schemas of OpenAPI documents: one schema that stands alone, as JSON Schema 2020-12."""

from __future__ import annotations

import jsonschema_rs
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue


def body_schema(
    schema: JsonValue, *, version: str = "3.0.3", schemas: JsonObject | None = None
) -> JsonObject:
    """The input schema of one POST whose JSON body has ``schema``."""
    result = at.openapi.read_operations(
        {
            "openapi": version,
            "paths": {
                "/a": {
                    "post": {"requestBody": {"content": {"application/json": {"schema": schema}}}}
                }
            },
            "components": {"schemas": schemas or {}},
        }
    )
    assert result.skipped == (), result.skipped
    (operation,) = result.operations
    input_schema = operation.definition.input_schema
    assert jsonschema_rs.meta.is_valid(input_schema), input_schema
    jsonschema_rs.validator_for(input_schema, offline=True)
    return input_schema


def body(schema: JsonValue, **options: object) -> JsonValue:
    properties = body_schema(schema, **options)["properties"]  # type: ignore[arg-type]
    assert isinstance(properties, dict)
    return properties["body"]


def accepts(input_schema: JsonObject, value: JsonValue) -> bool:
    return bool(jsonschema_rs.validator_for(input_schema, offline=True).is_valid({"body": value}))


@pytest.mark.parametrize("version", ["3.0.3", "3.1.0"])
@pytest.mark.parametrize(
    ("schema", "converted"),
    [
        ({"type": "string", "nullable": True}, {"type": ["string", "null"]}),
        (
            {"type": "string", "enum": ["a", "b"], "nullable": True},
            {"type": ["string", "null"], "enum": ["a", "b", None]},
        ),
        ({"type": "string", "nullable": False}, {"type": "string"}),
        (
            {"allOf": [{"type": "object"}], "nullable": True, "description": "d"},
            {"description": "d", "anyOf": [{"allOf": [{"type": "object"}]}, {"type": "null"}]},
        ),
        ({"nullable": True}, {"type": "null"}),
        ({"nullable": True, "description": "d"}, {"description": "d", "type": "null"}),
        (
            {"anyOf": [{"type": "integer"}, {"nullable": True}]},
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        ),
        (
            {"type": "integer", "minimum": 1, "exclusiveMinimum": True, "maximum": 9},
            {"type": "integer", "exclusiveMinimum": 1, "maximum": 9},
        ),
        (
            {"type": "number", "maximum": 5, "exclusiveMaximum": False},
            {"type": "number", "maximum": 5},
        ),
        ({"type": "string", "example": "x"}, {"type": "string", "examples": ["x"]}),
        (
            {"type": "array", "items": [{"type": "string"}]},
            {"type": "array", "prefixItems": [{"type": "string"}]},
        ),
    ],
)
def test_openapi_30_schemas_are_made_as_31_has_them(
    schema: JsonObject, converted: JsonObject, version: str
) -> None:
    assert body(schema, version=version) == converted


def test_a_validator_that_does_not_know_nullable_accepts_the_null() -> None:
    input_schema = body_schema(
        {"type": "object", "properties": {"note": {"type": "string", "nullable": True}}}
    )
    assert accepts(input_schema, {"note": None})
    assert not accepts(input_schema, {"note": 1})


def test_a_nullable_reference_allows_null_beside_it() -> None:
    input_schema = body_schema(
        {"$ref": "#/components/schemas/Pet", "nullable": True, "description": "d"},
        schemas={"Pet": {"type": "object", "required": ["name"]}},
    )
    properties = input_schema["properties"]
    assert properties == {
        "body": {"description": "d", "anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]}
    }
    assert accepts(input_schema, None)
    assert not accepts(input_schema, {})


def test_in_30_a_reference_has_no_siblings_but_title_and_description() -> None:
    schema: JsonObject = {"$ref": "#/components/schemas/Pet", "type": "string", "description": "d"}
    pet: JsonObject = {"Pet": {"type": "object"}}
    assert body(schema, schemas=pet) == {"$ref": "#/$defs/Pet", "description": "d"}
    assert body(schema, schemas=pet, version="3.1.0") == {
        "$ref": "#/$defs/Pet",
        "type": "string",
        "description": "d",
    }


def test_the_schemas_referred_to_are_under_defs_and_only_those() -> None:
    input_schema = body_schema(
        {"$ref": "#/components/schemas/Order"},
        schemas={
            "Order": {
                "type": "object",
                "properties": {"pet": {"$ref": "#/components/schemas/Pet"}},
            },
            "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
            "Tag": {"type": "string"},
            "Unused": {"type": "integer"},
        },
    )
    assert set(input_schema["$defs"]) == {"Order", "Pet", "Tag"}  # type: ignore[arg-type]
    assert accepts(input_schema, {"pet": {"tag": "x"}})
    assert not accepts(input_schema, {"pet": {"tag": 1}})


def test_cycles_between_schemas_are_allowed() -> None:
    input_schema = body_schema(
        {"$ref": "#/components/schemas/Filter"},
        schemas={
            "Filter": {
                "type": "object",
                "properties": {
                    "must": {"type": "array", "items": {"$ref": "#/components/schemas/Condition"}}
                },
            },
            "Condition": {
                "anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Filter"}],
            },
            "Self": {"$ref": "#/components/schemas/Self"},
        },
    )
    assert set(input_schema["$defs"]) == {"Filter", "Condition"}  # type: ignore[arg-type]
    assert accepts(input_schema, {"must": ["a", {"must": [{"must": ["b"]}]}]})
    assert not accepts(input_schema, {"must": [{"must": [1]}]})


def test_defs_keys_and_references_are_escaped_names() -> None:
    input_schema = body_schema(
        {"$ref": "#/components/schemas/a~1b%20c"},
        schemas={"a/b c": {"type": "string"}, "a_b_c": {"type": "integer"}},
    )
    assert input_schema["properties"] == {"body": {"$ref": "#/$defs/a_b_c"}}
    assert input_schema["$defs"] == {"a_b_c": {"type": "string"}}


def test_a_required_read_only_property_is_not_required_of_a_request() -> None:
    input_schema = body_schema(
        {
            "type": "object",
            "required": ["id", "name"],
            "properties": {"id": {"type": "integer", "readOnly": True}, "name": {"type": "string"}},
        }
    )
    assert input_schema["properties"]["body"]["required"] == ["name"]  # type: ignore[index,call-overload]
    assert accepts(input_schema, {"name": "rex"})


def test_only_json_schema_keywords_with_good_values_are_kept() -> None:
    converted = body(
        {
            "type": "object",
            "x-internal": True,
            "discriminator": {"propertyName": "kind", "mapping": {"a": "#/components/schemas/A"}},
            "xml": {"name": "pet"},
            "externalDocs": {"url": "https://x"},
            "$id": "https://example.com/pet",
            "$schema": "http://json-schema.org/draft-04/schema#",
            "required": True,
            "minLength": -1,
            "maxItems": 1.5,
            "multipleOf": 0,
            "uniqueItems": "yes",
            "properties": {
                "file": {"type": "file"},
                "code": {"type": "string", "pattern": "(?<=x"},
                "ok": {"type": "string", "pattern": "^[a-z]+$", "format": "custom"},
                "junk": "string",
                "types": {"type": ["string", "string"]},
            },
            "patternProperties": {"(": {}, "^x-": {"type": "string"}},
            "dependentRequired": {"a": ["b", 1]},
        }
    )
    assert converted == {
        "type": "object",
        "properties": {
            "file": {},
            "code": {"type": "string"},
            "ok": {"type": "string", "pattern": "^[a-z]+$", "format": "custom"},
            "junk": {},
            "types": {},
        },
        "patternProperties": {"^x-": {"type": "string"}},
        "dependentRequired": {"a": ["b"]},
    }


def test_parameter_schemas_are_converted_too() -> None:
    result = at.openapi.read_operations(
        {
            "openapi": "3.0.0",
            "paths": {
                "/a": {
                    "get": {
                        "parameters": [
                            {
                                "name": "since",
                                "in": "query",
                                "description": "From when.",
                                "deprecated": True,
                                "schema": {"type": "string", "nullable": True, "x-go": "s"},
                            },
                            {
                                "name": "kind",
                                "in": "query",
                                "schema": {"$ref": "#/components/schemas/Kind"},
                            },
                        ]
                    }
                }
            },
            "components": {
                "schemas": {"Kind": {"type": "string", "enum": ["a"], "nullable": True}}
            },
        }
    )
    (operation,) = result.operations
    schema = operation.definition.input_schema
    assert schema["properties"] == {
        "since": {"description": "From when.", "type": ["string", "null"], "deprecated": True},
        "kind": {"$ref": "#/$defs/Kind"},
    }
    assert schema["$defs"] == {"Kind": {"type": ["string", "null"], "enum": ["a", None]}}


def dig(value: JsonValue, *keys: str) -> JsonObject:
    """The object at ``keys`` in ``value``, each step an object."""
    for key in keys:
        assert isinstance(value, dict), value
        value = value[key]
    assert isinstance(value, dict), value
    return value


QUERY: JsonObject = {
    "Query": {
        "type": "object",
        "required": ["q"],
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "nullable": True}},
    }
}


def searches(properties: JsonObject) -> JsonObject:
    """Meilisearch's multi_search: ``$ref`` among the properties, for another schema's."""
    return {"type": "object", "additionalProperties": False, "properties": properties}


def test_a_ref_among_the_properties_to_another_schema_s_properties_merges_them_in() -> None:
    # issue 32, item 9: what the author meant, not a property named "$ref"
    schema = searches(
        {"indexUid": {"type": "string"}, "$ref": "#/components/schemas/Query/properties"}
    )
    input_schema = body_schema(schema, schemas=QUERY)
    assert input_schema["properties"] == {
        "body": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "indexUid": {"type": "string"},
                "q": {"type": "string"},
                "limit": {"type": ["integer", "null"]},
            },
        }
    }
    assert accepts(input_schema, {"indexUid": "movies", "q": "future", "limit": None})
    assert not accepts(input_schema, {"$ref": "anything"})


def test_the_merged_properties_may_merge_in_others_in_turn() -> None:
    schemas: JsonObject = {
        **QUERY,
        "Paged": {
            "properties": {
                "page": {"type": "integer"},
                "$ref": "#/components/schemas/Query/properties",
            }
        },
    }
    schema = searches({"$ref": "#/components/schemas/Paged/properties"})
    assert list(dig(body(schema, schemas=schemas), "properties")) == ["page", "q", "limit"]


@pytest.mark.parametrize(
    ("properties", "schemas"),
    [
        # a property named "$ref" with a schema of its own
        ({"$ref": {"type": "string"}}, QUERY),
        # a schema, not its properties: whether its other keywords apply is not said
        ({"$ref": "#/components/schemas/Query"}, QUERY),
        ({"$ref": "#/components/schemas/Missing/properties"}, QUERY),
        ({"$ref": "#/components/schemas/Empty/properties"}, {"Empty": {"type": "object"}}),
        ({"$ref": "https://example.com/query.json#/properties"}, QUERY),
        # a name both here and there, with two schemas
        ({"q": {"type": "integer"}, "$ref": "#/components/schemas/Query/properties"}, QUERY),
        # properties that merge in themselves
        (
            {"$ref": "#/components/schemas/Loop/properties"},
            {"Loop": {"properties": {"$ref": "#/components/schemas/Loop/properties"}}},
        ),
    ],
)
def test_a_ref_among_the_properties_that_is_not_unambiguous_skips_the_operation(
    properties: JsonObject, schemas: JsonObject
) -> None:
    result = at.openapi.read_operations(
        {
            "openapi": "3.1.0",
            "paths": {
                "/a": {
                    "post": {
                        "requestBody": {
                            "content": {"application/json": {"schema": searches(properties)}}
                        }
                    }
                }
            },
            "components": {"schemas": schemas},
        }
    )
    assert result.operations == ()
    (skipped,) = result.skipped
    assert skipped.reason == "reference"
    assert "$ref" in skipped.detail


def test_a_multipart_form_s_fields_are_the_merged_properties_too() -> None:
    upload: JsonObject = {
        "Upload": {"properties": {"file": {"type": "string", "format": "binary"}}},
        **QUERY,
    }
    schema = searches(
        {"$ref": "#/components/schemas/Upload/properties", "title": {"type": "string"}}
    )
    result = at.openapi.read_operations(
        {
            "openapi": "3.1.0",
            "paths": {
                "/a": {
                    "post": {
                        "requestBody": {"content": {"multipart/form-data": {"schema": schema}}}
                    }
                }
            },
            "components": {"schemas": upload},
        }
    )
    assert result.skipped == ()
    (operation,) = result.operations
    form = dig(operation.definition.input_schema, "properties", "body", "properties")
    assert list(form) == ["title", "file"]
    # the merged field is read as a form's field: a file the model gives
    assert operation.request.encoding["file"].file
