"""A fastmcp server over stdio, run by tests/actors/test_mcp_stdio.py."""

from __future__ import annotations

from fastmcp import FastMCP

server = FastMCP("stdio-fastmcp")


@server.tool(annotations={"destructiveHint": False, "idempotentHint": True})
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@server.tool()
def numbers() -> list[int]:
    """Three numbers."""
    return [1, 2, 3]


if __name__ == "__main__":
    server.run(transport="stdio", show_banner=False)
