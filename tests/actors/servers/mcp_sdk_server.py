"""An MCP server of the official SDK (``mcp``) over stdio, run by tests/actors/test_mcp_stdio.py."""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("stdio-sdk")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, title="Add them"))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def where() -> dict[str, str | None]:
    """The server's working directory, the variable the test gave it, and one of the host's."""
    return {
        "cwd": os.getcwd(),
        "given": os.environ.get("AMENDS_GIVEN"),
        "host": os.environ.get("AMENDS_HOST_SECRET"),
        "path": os.environ.get("PATH"),
    }


@server.tool()
def failing() -> str:
    """Always fails."""
    raise ToolError("the failing tool failed")


@server.tool()
async def slow() -> str:
    """Never finishes on its own; says on stderr when it is cancelled."""
    print("slow tool started", file=sys.stderr, flush=True)
    try:
        await anyio.sleep(3600)
    finally:
        print("slow tool ended", file=sys.stderr, flush=True)
    return "late"


@server.tool()
async def steps(ctx: Context) -> dict[str, bool]:
    """Reports three steps of progress, and says whether it was asked to."""
    meta = ctx.request_context.meta or {}
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    return {"asked": meta.get("progress_token") is not None}


if __name__ == "__main__":
    print("sdk server starting", file=sys.stderr, flush=True)
    server.run("stdio")
