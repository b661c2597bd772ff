"""An assembly's parts are checked where they are given: catalog JSON not read back, a source
given bare, or something that is no source fails at once with the fix, not later inside."""

from __future__ import annotations

import pytest

import amends_toolkit as at

from .sources import Scripted

STORED = {"name": "list_tasks", "description": "List.", "inputSchema": {"type": "object"}}


def allow(source: str, definition: at.ToolDefinition) -> at.Decision:
    return "allow"


def test_definitions_given_as_catalog_json_are_refused_with_the_fix() -> None:
    with pytest.raises(TypeError) as caught:
        at.Member(Scripted("tasks"), [STORED])  # type: ignore[list-item]
    assert str(caught.value) == (
        "definitions must be at.ToolDefinition values, not {'name': 'list_tasks', "
        "'description': 'List.', 'inputSchema': {'type': 'object'…; read stored catalog JSON "
        "with at.catalog.load(list[at.ToolDefinition], data)"
    )
    definitions = at.catalog.load(list[at.ToolDefinition], [STORED])
    assert at.Member(Scripted("tasks"), definitions).definitions == tuple(definitions)


def test_one_definition_as_a_dict_is_refused_too() -> None:
    with pytest.raises(TypeError, match=r"definitions must be a list of at\.ToolDefinition values"):
        at.Member(Scripted("tasks"), STORED)  # type: ignore[arg-type]


def test_a_source_given_bare_to_assemble_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError) as caught:
        at.assemble([Scripted("tasks")], allow)  # type: ignore[list-item]
    assert str(caught.value).startswith("members must be at.Member values, not ")
    assert str(caught.value).endswith(
        ": give each source with its definitions, as in "
        "at.assemble([at.Member(ref, await ref.discover())], decide)"
    )


def test_what_is_no_source_is_refused_by_member() -> None:
    with pytest.raises(TypeError, match=r"^source must be a tool source .* not 'tasks'$"):
        at.Member("tasks", [])  # type: ignore[arg-type]
