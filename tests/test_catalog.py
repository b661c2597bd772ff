from __future__ import annotations

import json

import attrs
import pytest

import amends_toolkit as at

DEFINITION = at.ToolDefinition(
    name="create_issue",
    description="Create an issue",
    input_schema={
        "type": "object",
        "properties": {"title": {"type": "string", "default": None}},
        "required": ["title"],
    },
    annotations=at.Annotations(title="Create", read_only=False, open_world=True),
)


def test_a_definition_is_json_data_with_camel_case_keys_and_unknown_hints_left_out() -> None:
    data = at.catalog.dump(DEFINITION)
    assert data == {
        "name": "create_issue",
        "description": "Create an issue",
        "inputSchema": DEFINITION.input_schema,
        "annotations": {"title": "Create", "readOnly": False, "openWorld": True},
    }
    json.dumps(data)  # JSON data, not text


def test_a_schema_is_kept_exactly_as_the_source_gave_it() -> None:
    data = at.catalog.dump(DEFINITION)
    assert isinstance(data, dict)
    assert data["inputSchema"] == {
        "type": "object",
        "properties": {"title": {"type": "string", "default": None}},
        "required": ["title"],
    }


def test_definitions_and_decisions_read_back_as_they_were() -> None:
    stored = json.loads(json.dumps(at.catalog.dump([DEFINITION, DEFINITION])))
    assert at.catalog.load(list[at.ToolDefinition], stored) == [DEFINITION, DEFINITION]
    assert at.catalog.load(at.Decision, at.catalog.dump("approve")) == "approve"


def test_keywords_are_stored_when_there_are_some_and_read_back() -> None:
    definition = attrs.evolve(DEFINITION, keywords=["/repos/{repo}/issues", "Issues"])
    data = at.catalog.dump(definition)
    assert isinstance(data, dict)
    assert data["keywords"] == ["/repos/{repo}/issues", "Issues"]
    assert at.catalog.load(at.ToolDefinition, json.loads(json.dumps(data))) == definition


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"colour": "red"}, "colour"),
        ({"name": 3}, "$.name"),
        ({"annotations": {"readOnly": "yes"}}, "$.annotations.readOnly"),
        ({"annotations": {"read_only": True}}, "read_only"),
        ({"inputSchema": "not a schema"}, "$.inputSchema"),
        ({"keywords": [3]}, "$.keywords"),
    ],
)
def test_reading_refuses_an_unknown_key_or_a_bad_value_and_names_it(
    change: dict[str, object], named: str
) -> None:
    data = at.catalog.dump(DEFINITION)
    assert isinstance(data, dict)
    with pytest.raises(at.CatalogError, match=named.replace("$", r"\$")):
        at.catalog.load(at.ToolDefinition, {**data, **change})


def test_reading_refuses_a_missing_key_and_what_is_not_an_object() -> None:
    with pytest.raises(at.CatalogError, match=r"\$\.description"):
        at.catalog.load(at.ToolDefinition, {"name": "x", "inputSchema": {}})
    with pytest.raises(at.CatalogError, match="expected a JSON object"):
        at.catalog.load(at.ToolDefinition, [1])
    with pytest.raises(at.CatalogError, match="allow, approve, block"):
        at.catalog.load(at.Decision, "maybe")
    assert issubclass(at.CatalogError, ValueError)


def test_a_definition_needs_an_object_schema() -> None:
    with pytest.raises(TypeError, match="input_schema"):
        at.ToolDefinition(name="x", description="", input_schema=[])  # type: ignore[arg-type]


def test_an_operation_error_names_the_stored_key_and_says_what_its_check_found() -> None:
    operation = at.http.Operation(
        definition=DEFINITION,
        request=at.http.RequestTemplate(
            method="GET",
            path="/items/{id}",
            params={"item_id": at.http.Param(location="path", name="id")},
        ),
    )
    data = at.catalog.dump(operation)
    assert isinstance(data, dict)
    request = data["request"]
    assert isinstance(request, dict)
    with pytest.raises(at.CatalogError, match=r"\$\.request\.params\['item_id'\]\.in"):
        at.catalog.load(
            at.http.Operation,
            {**data, "request": {**request, "params": {"item_id": {"in": "body", "name": "id"}}}},
        )
    with pytest.raises(at.CatalogError, match=r"placeholders .* @ \$\.request$"):
        at.catalog.load(at.http.Operation, {**data, "request": {**request, "path": "/items"}})


def test_a_list_read_from_one_object_says_how_to_read_one() -> None:
    stored = {"name": "list_tasks", "description": "", "inputSchema": {"type": "object"}}
    with pytest.raises(at.CatalogError) as caught:
        at.catalog.load(list[at.ToolDefinition], stored)
    assert str(caught.value) == (
        "cannot read list[ToolDefinition]: expected a JSON array, got an object; "
        "to read one, use at.catalog.load(at.ToolDefinition, data)"
    )


def test_an_item_that_is_not_an_object_is_named_by_its_place() -> None:
    stored = {"name": "list_tasks", "description": "", "inputSchema": {"type": "object"}}
    with pytest.raises(at.CatalogError) as caught:
        at.catalog.load(list[at.ToolDefinition], [stored, "list_tasks"])
    assert str(caught.value) == (
        "cannot read list[ToolDefinition]: invalid value for type, expected ToolDefinition @ $[1]"
    )
