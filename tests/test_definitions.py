"""A definition is checked where it is made: plain data in place of its parts is refused with
the fix, and so is a schema whose root is not an object (the docs promise one)."""

from __future__ import annotations

import re

import pytest

import amends_toolkit as at
from amends_toolkit.protocols.mcp._tools import read_tools_page


def test_annotations_given_as_a_dict_are_refused_with_the_fix() -> None:
    with pytest.raises(TypeError) as caught:
        at.ToolDefinition(
            name="read",
            description="Read.",
            input_schema={"type": "object"},
            annotations={"readOnly": True},  # type: ignore[arg-type]
        )
    assert str(caught.value) == (
        "the annotations of 'read' must be an at.Annotations, not a dict: give "
        "at.Annotations(read_only=True, ...), or read stored JSON (readOnly, ...) with "
        "at.catalog.load(at.ToolDefinition, data)"
    )


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "string"}, "has the root type 'string': a tool takes a JSON object"),
        ({"type": ["object", "null"]}, "has the root type ['object', 'null']"),
        ('{"type": "object"}', "is a string, not a JSON Schema (a dict)"),
        ([{"type": "object"}], "is an array, not a JSON Schema (a dict)"),
    ],
)
def test_a_schema_whose_root_is_not_an_object_is_refused(schema: object, said: str) -> None:
    with pytest.raises(TypeError, match=rf"^the input_schema of 'read' {re.escape(said)}"):
        at.ToolDefinition(name="read", description="Read.", input_schema=schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("schema", [{"type": "object"}, {"properties": {}}, {}])
def test_an_object_root_or_no_type_is_taken(schema: at.JsonObject) -> None:
    assert at.ToolDefinition(name="t", description="", input_schema=schema).input_schema == schema


def test_stored_json_with_a_root_that_is_not_an_object_is_a_catalog_error() -> None:
    data = {"name": "read", "description": "", "inputSchema": {"type": "array"}}
    with pytest.raises(at.CatalogError, match="has the root type 'array'"):
        at.catalog.load(at.ToolDefinition, data)


def test_an_mcp_tool_whose_schema_root_is_not_an_object_is_set_apart() -> None:
    page = read_tools_page(
        {
            "tools": [
                {"name": "good", "inputSchema": {"type": "object"}},
                {"name": "scalar", "inputSchema": {"type": "string"}},
            ]
        },
        check_marks=False,
    )
    assert [tool.definition.name for tool in page.tools] == ["good"]
    [rejected] = page.rejected
    assert rejected.name == "scalar"
    assert rejected.reason.startswith("its inputSchema has the root type 'string'")


def test_keywords_are_a_list_of_texts() -> None:
    definition = at.ToolDefinition(
        name="a", description="A.", input_schema={}, keywords=["/a/{id}", "Things"]
    )
    assert definition.keywords == ("/a/{id}", "Things")
    with pytest.raises(TypeError, match="not one text"):
        at.ToolDefinition(name="a", description="A.", input_schema={}, keywords="/a")
    with pytest.raises(TypeError, match="must be strings"):
        at.ToolDefinition(name="a", description="A.", input_schema={}, keywords=[3])  # type: ignore[list-item]
