"""Tool search over a real MCP server (fastmcp, in process), through the runtime, an assembly
under a policy, and a session: what a host does end to end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import httpx
import pytest
from fastmcp import FastMCP

import amends_toolkit as at
from amends_toolkit import JsonObject

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8000"


def pet_server() -> FastMCP:
    server = FastMCP("pets")

    @server.tool(annotations={"readOnlyHint": True})
    def list_pets() -> list[str]:
        """List every pet in the store."""
        return ["rex", "tom"]

    @server.tool(annotations={"destructiveHint": True})
    def delete_pet(id: int) -> str:
        """Remove a pet from the store for good."""
        return f"deleted {id}"

    @server.tool(annotations={"destructiveHint": True, "openWorldHint": True})
    def sell_pet(id: int) -> str:
        """Sell a pet to a buyer."""
        return f"sold {id}"

    return server


@asynccontextmanager
async def served() -> AsyncIterator[httpx.AsyncClient]:
    app = pet_server().http_app(path="/mcp", json_response=True)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client,
    ):
        yield client


def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
    if definition.annotations.read_only:
        return "allow"
    if definition.annotations.open_world:
        return "block"
    return "approve"


async def test_a_model_finds_and_runs_an_mcp_servers_tools_through_search() -> None:
    asked: list[tuple[str, JsonObject]] = []

    async def approve(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return True

    async with served() as client, at.Runtime() as runtime:
        pets = await runtime.spawn(at.mcp.http(name="pets", url=f"{BASE}/mcp", client=client))
        toolkit = at.assemble([at.Member(pets, await pets.discover())], decide)
        presented = at.tool_search(toolkit)
        async with at.Session(presented, approve=approve) as session:
            answer = cast("JsonObject", await session.call("tool_search", {"query": "remove pet"}))
            tools = cast("list[JsonObject]", answer["tools"])
            assert tools[0]["name"] == "pets__delete_pet"
            assert tools[0]["description"] == "Remove a pet from the store for good."
            assert answer["available"] == 2  # sell_pet is blocked
            sold = await session.call("tool_call", {"name": "pets__sell_pet", "input": {"id": 1}})
            assert cast("JsonObject", sold)["code"] == "NotFoundError"
            assert asked == []
            call: JsonObject = {"name": "pets__delete_pet", "input": {"id": 7}}
            assert await session.call("tool_call", call) == await toolkit.call(
                "pets__delete_pet", {"id": 7}, approved=True
            )
            assert asked == [("tool_call", call)]
            listed = await session.call("tool_call", {"name": "pets__list_pets", "input": {}})
            assert listed == await toolkit.call("pets__list_pets", {})
            assert asked == [("tool_call", call)]
