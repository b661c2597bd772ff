"""Code mode served over MCP: a run asks the front's ``approve`` about a call in the middle."""

from __future__ import annotations

import json

import pytest
from mcp import Client

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")

pytestmark = pytest.mark.anyio

CODE = """
removed = []
for path in ["old.log", "keep.txt"]:
    try:
        removed.append(await tools.delete({"path": path}))
    except ToolError as error:
        removed.append(str(error).split(":")[0])
return removed
"""


async def test_a_run_served_over_mcp_asks_the_fronts_approve_about_each_call() -> None:
    ran: list[JsonValue] = []

    async def delete(input: JsonObject) -> JsonValue:
        ran.append(input["path"])
        return f"deleted {input['path']}"

    tool = Tool(
        name="delete",
        description="Delete a file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        needs_approval=True,
    )
    asked: list[tuple[str, JsonObject]] = []

    def approve(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return input["path"] == "old.log"

    async with at.MontyRuntime(max_processes=1) as runtime:
        presented = at.code_mode(
            Toolkit.from_entries([ToolEntry(tool=tool, handler=delete)]), runtime, approval="ask"
        )
        server = at.adapters.mcp_server(presented, name="code", approve=approve)
        async with Client(server.server) as client:
            listed = await client.list_tools()
            answer = await client.call_tool("execute", {"code": CODE})
    assert [tool.name for tool in listed.tools] == ["execute"]
    assert answer.is_error is False
    assert json.loads(answer.content[0].text) == {  # type: ignore[union-attr]
        "result": ["deleted old.log", "ApprovalDenied"],
        "logs": [],
    }
    assert asked == [("delete", {"path": "old.log"}), ("delete", {"path": "keep.txt"})]
    assert ran == ["old.log"]
