"""What the Python declarations of code mode say for each kind of schema."""

from __future__ import annotations

import ast

import pytest

from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.presentations._declarations import MAX_DEPTH, declare, identifier
from amends_toolkit.runtime import Tool


def declared(schema: JsonObject, *, name: str = "tool", description: str = "Does it.") -> str:
    text = declare(
        [(identifier(name), Tool(name=name, description=description, input_schema=schema))]
    )
    ast.parse(text)  # every declaration is Python
    return text


def props(required: list[str] | None = None, **properties: JsonObject) -> JsonObject:
    names: list[JsonValue] = list(required or [])
    return {"type": "object", "properties": dict(properties), "required": names}


def test_required_and_optional_properties() -> None:
    text = declared(props(["a"], a={"type": "string"}, b={"type": "integer"}))
    assert "class ToolInput(TypedDict):\n    a: str\n    b: NotRequired[int]\n" in text
    assert "async def tool(self, input: ToolInput, /) -> Any:" in text


@pytest.mark.parametrize(
    ("schema", "written"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"type": "string", "enum": ["x", 'say "y"']}, "Literal['x', 'say \"y\"']"),
        ({"enum": [1, None, True]}, "Literal[1, None, True]"),
        ({"enum": [{"a": 1}]}, "Any"),
        ({"const": "only"}, "Literal['only']"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "array"}, "list[Any]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        ({"oneOf": [{"type": "string"}, {}]}, "Any"),
        ({"allOf": [{"type": "string"}]}, "str"),
        ({"allOf": [{"type": "string"}, {"minLength": 1}]}, "Any"),
        ({}, "Any"),
        (True, "Any"),
        ({"not": {"type": "string"}}, "Any"),
    ],
)
def test_what_each_kind_of_value_is_written_as(schema: JsonObject, written: str) -> None:
    assert f"    x: {written}\n" in declared(props(["x"], x=schema))


def test_a_nested_object_is_a_typed_dict_of_its_own_with_its_description() -> None:
    text = declared(
        props(
            ["owner"],
            owner={
                "type": "object",
                "description": "Who owns it.",
                "properties": {"login": {"type": "string"}},
                "required": ["login"],
            },
            tags={
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
        )
    )
    assert 'class ToolInputOwner(TypedDict):\n    """Who owns it."""\n    login: str\n' in text
    assert "class ToolInputTagsItem(TypedDict):\n    k: NotRequired[str]\n" in text
    assert "    # Who owns it.\n    owner: ToolInputOwner\n" in text
    assert "    tags: NotRequired[list[ToolInputTagsItem]]\n" in text


def test_descriptions_and_defaults_are_comments_and_the_tools_is_its_docstring() -> None:
    text = declared(
        props(a={"type": "integer", "description": "How many.\nAt most ten.", "default": 5}),
        description="Counts things.",
    )
    assert (
        "    # How many.\n    # At most ten.\n    # Default: 5.\n    a: NotRequired[int]\n" in text
    )
    assert '        """Counts things."""\n' in text


def test_a_docstring_cannot_be_closed_by_a_description() -> None:
    text = declared(props(), description='Ends here """ then print("x")')
    assert 'Ends here \\"\\"\\" then' in text


def test_a_local_ref_is_followed() -> None:
    schema = props(
        ["pet"],
        pet={"$ref": "#/$defs/Pet"},
    )
    schema["$defs"] = {
        "Pet": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    }
    text = declared(schema)
    assert "class ToolInputPet(TypedDict):\n    name: str\n" in text


def test_a_cyclic_schema_is_any_where_the_cycle_closes() -> None:
    schema = props(["node"], node={"$ref": "#/$defs/Node"})
    schema["$defs"] = {
        "Node": {
            "type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
        }
    }
    text = declared(schema)
    assert (
        "class ToolInputNode(TypedDict):\n    value: NotRequired[int]\n    next: NotRequired[Any]\n"
        in text
    )


def test_a_ref_it_cannot_follow_is_any() -> None:
    text = declared(
        props(
            ["a", "b"],
            a={"$ref": "https://example.com/schema.json"},
            b={"$ref": "#/$defs/Missing"},
        )
    )
    assert "    a: Any\n    b: Any\n" in text


def test_a_value_nested_more_than_six_levels_is_any() -> None:
    inner: JsonObject = {"type": "string"}
    for _ in range(MAX_DEPTH + 2):
        inner = {"type": "array", "items": inner}
    text = declared(props(["deep"], deep=inner))
    assert "    deep: " + "list[" * MAX_DEPTH + "Any" + "]" * MAX_DEPTH + "\n" in text

    shallow: JsonObject = {"type": "string"}
    for _ in range(MAX_DEPTH - 1):
        shallow = {"type": "array", "items": shallow}
    assert "list[" * (MAX_DEPTH - 1) + "str" in declared(props(["x"], x=shallow))


def test_keys_that_are_not_identifiers_use_the_functional_form() -> None:
    keys: dict[str, JsonObject] = {"from": {"type": "string"}, "x-y": {"type": "integer"}}
    text = declared(props(["from"], **keys))
    assert (
        'ToolInput = TypedDict(\'ToolInput\', {\n    "from": str,\n    "x-y": NotRequired[int],\n})'
        in text
    )


def test_an_input_without_properties_is_a_dict() -> None:
    assert "async def tool(self, input: dict[str, Any], /) -> Any:" in declared({"type": "object"})


def test_a_tool_named_with_a_dash_is_declared_by_its_identifier_and_its_exact_name() -> None:
    text = declared(props(), name="github__create-issue")
    assert "async def github__create_issue(self, input: dict[str, Any], /) -> Any:" in text
    assert 'Also tools["github__create-issue"].' in text


@pytest.mark.parametrize(
    ("name", "attribute"),
    [("a-b", "a_b"), ("plain", "plain"), ("3d", "_3d"), ("class", "_class"), ("x__y-z", "x__y_z")],
)
def test_identifier_is_deterministic(name: str, attribute: str) -> None:
    assert identifier(name) == attribute


def test_type_names_stay_unique_across_tools() -> None:
    tools = [
        ("a_b", Tool(name="a_b", description="", input_schema=props(x={"type": "string"}))),
        ("a-b", Tool(name="a-b", description="", input_schema=props(y={"type": "string"}))),
    ]
    text = declare([(identifier(name), tool) for name, tool in tools])
    assert "class ABInput(TypedDict):" in text
    assert "class ABInput2(TypedDict):" in text
    ast.parse(text)


def test_a_shape_two_tools_share_is_written_once() -> None:
    address = props(["city"], city={"type": "string"}, zip={"type": "string"})
    notes: list[tuple[str, JsonObject]] = [
        ("ship", {"type": "string"}),
        ("bill", {"type": "integer"}),
    ]
    tools = [
        Tool(name=name, description=name, input_schema=props(["to"], to=address, note=note))
        for name, note in notes
    ]
    text = declare([(tool.name, tool) for tool in tools])
    ast.parse(text)
    assert text.count("city: str") == 1
    assert "class ShipInput(TypedDict):\n    to: ShipInputTo\n    note: NotRequired[str]" in text
    assert "class BillInput(TypedDict):\n    to: ShipInputTo\n    note: NotRequired[int]" in text


def test_tools_are_also_declared_by_their_exact_names() -> None:
    assert "    def __getitem__(self, name: str, /) -> Any: ..." in declared(props())
