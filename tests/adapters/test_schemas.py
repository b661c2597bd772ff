"""Property names a model API refuses, mapped to names it accepts and back, and object roots."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from anthropic.types import ToolParam
from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.adapters import (
    anthropic_tools,
    openai_responses_tools,
    openai_tools,
    run_anthropic_tool_uses,
    run_openai_function_calls,
    run_openai_tool_calls,
)
from amends_toolkit.adapters._schemas import PROPERTY_NAME, model_names, model_schema, source_input
from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

LONG = "x" * 70

# Meilisearch's multi_search, whose document misuses $ref as a property, and names of the kinds
# MCP servers and OpenAPI documents give (OData, brackets, spaces, over 64 characters).
SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "body": {
            "type": "object",
            "properties": {"$ref": {"type": "string"}, "_ref": {"type": "integer"}},
            "required": ["$ref"],
        },
        "filter[id]": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "a b": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]},
        LONG: {"type": "boolean"},
        "plain": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Item"}},
    },
    "dependentRequired": {"a b": ["filter[id]"]},
    "$defs": {"Item": {"type": "object", "properties": {"@odata.type": {"type": "string"}}}},
}


def names(schema: JsonValue) -> list[str]:
    found: list[str] = []
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                found += node["properties"]  # type: ignore[arg-type]
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return found


def test_refused_names_are_mapped_to_accepted_ones_everywhere() -> None:
    mapped = model_schema(SCHEMA)
    assert all(PROPERTY_NAME.fullmatch(name) for name in names(mapped)), names(mapped)
    properties = mapped["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == [
        "body",
        "filter_id_",
        "a_b",
        LONG[:55] + "_" + properties_hash(),
        "plain",
    ]
    body = properties["body"]
    assert body == {
        "type": "object",
        "properties": {"_ref_2": {"type": "string"}, "_ref": {"type": "integer"}},
        "required": ["_ref_2"],
    }
    assert mapped["dependentRequired"] == {"a_b": ["filter_id_"]}
    assert mapped["$defs"] == {
        "Item": {"type": "object", "properties": {"_odata.type": {"type": "string"}}}
    }


def test_dependent_schemas_keys_are_property_names_and_are_mapped_as_they_are() -> None:
    # dependentSchemas is keyed by property names (2020-12): its keys follow the properties'
    # mapping, and its schemas are walked (a name inside one is mapped too).
    schema: JsonObject = {
        "type": "object",
        "properties": {"filter[id]": {"type": "string"}, "page": {"type": "integer"}},
        "dependentSchemas": {
            "filter[id]": {"properties": {"@odata.type": {"type": "string"}}},
        },
        "propertyNames": {"properties": {"a b": {"type": "string"}}},
    }
    mapped = model_schema(schema)
    assert mapped["dependentSchemas"] == {
        "filter_id_": {"properties": {"_odata.type": {"type": "string"}}}
    }
    assert mapped["propertyNames"] == {"properties": {"a_b": {"type": "string"}}}


def properties_hash() -> str:
    import hashlib

    return hashlib.sha256(LONG.encode()).hexdigest()[:8]


def test_the_mapping_is_the_same_each_time_and_leaves_good_schemas_alone() -> None:
    assert model_schema(SCHEMA) == model_schema(SCHEMA)
    assert model_names(["$ref", "_ref", "a"]) == {"$ref": "_ref_2"}
    assert model_names(["a", "_ref", "$ref"]) == {"$ref": "_ref_2"}
    good: JsonObject = {"type": "object", "properties": {"a.b-c_d": {"type": "string"}}}
    assert model_schema(good) is good


def test_the_root_is_an_object() -> None:
    assert model_schema({"properties": {"a": {}}}) == {"type": "object", "properties": {"a": {}}}


def test_the_models_input_is_given_back_its_original_names() -> None:
    given: JsonValue = {
        "body": {"_ref_2": "indexes/movies", "_ref": 1},
        "filter_id_": [{"_odata.type": "a"}, {"other": 1}],
        "a_b": {"_odata.type": "b"},
        LONG[:55] + "_" + properties_hash(): True,
        "plain": {"k": {"_odata.type": "c"}},
    }
    assert source_input(SCHEMA, given) == {
        "body": {"$ref": "indexes/movies", "_ref": 1},
        "filter[id]": [{"@odata.type": "a"}, {"other": 1}],
        "a b": {"@odata.type": "b"},
        LONG: True,
        "plain": {"k": {"@odata.type": "c"}},
    }
    good: JsonObject = {"type": "object", "properties": {"a": {}}}
    value: JsonValue = {"a": {"$ref": 1}}
    assert source_input(good, value) is value


def test_a_tuples_items_are_given_back_their_names_by_position() -> None:
    odd: JsonObject = {"type": "object", "properties": {"@id": {}}}
    schema: JsonObject = {
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [odd, {}], "items": {}}},
    }
    given: JsonValue = {"pair": [{"_id": 1}, {"_id": 2}, {"_id": 3}]}
    assert source_input(schema, given) == {"pair": [{"@id": 1}, {"_id": 2}, {"_id": 3}]}


class Recording:
    name = "api"

    def __init__(self) -> None:
        self.inputs: list[JsonObject] = []

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [DEFINITION]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.inputs.append(input)
        return "done"


DEFINITION = at.ToolDefinition(name="multi_search", description="Search.", input_schema=SCHEMA)
ARGUMENTS = '{"body": {"_ref_2": "r"}, "a_b": {"_odata.type": "t"}, "filter_id_": []}'
INPUT: JsonObject = json.loads(ARGUMENTS)
ORIGINAL: JsonObject = {"body": {"$ref": "r"}, "a b": {"@odata.type": "t"}, "filter[id]": []}


@pytest.mark.anyio
async def test_each_adapter_gives_the_source_the_names_it_declared() -> None:
    source = Recording()
    kit = at.source_toolkit(source, [DEFINITION])
    tool = anthropic_tools(kit)[0]
    TypeAdapter(ToolParam).validate_python(tool)
    assert tool["input_schema"] == model_schema(SCHEMA)
    assert openai_tools(kit)[0]["function"]["parameters"] == model_schema(SCHEMA)  # type: ignore[index,call-overload]
    assert openai_responses_tools(kit)[0]["parameters"] == model_schema(SCHEMA)
    await run_anthropic_tool_uses(
        kit, [{"type": "tool_use", "id": "t1", "name": "multi_search", "input": INPUT}]
    )
    async with at.Session(kit, approve=lambda name, input: True) as session:
        await run_openai_tool_calls(
            session,
            [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "multi_search",
                        "arguments": ARGUMENTS,
                    },
                }
            ],
        )
    await run_openai_function_calls(
        kit,
        [
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "multi_search",
                "arguments": ARGUMENTS,
            }
        ],
    )
    assert source.inputs == [ORIGINAL, ORIGINAL, ORIGINAL]


@pytest.mark.anyio
async def test_a_pydantic_ai_agent_sees_mapped_names_and_the_source_gets_its_own() -> None:
    seen: list[JsonObject] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            seen.append(info.function_tools[0].parameters_json_schema)
            return ModelResponse(parts=[ToolCallPart(tool_name="multi_search", args=ARGUMENTS)])
        assert isinstance(messages[-1], ModelRequest)
        return ModelResponse(parts=[TextPart("done")])

    source = Recording()
    kit = at.source_toolkit(source, [DEFINITION])
    await Agent(FunctionModel(model), toolsets=[ToolkitToolset(kit)]).run("go")
    assert seen == [model_schema(SCHEMA)]
    assert source.inputs == [ORIGINAL]
