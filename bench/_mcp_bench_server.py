"""The official SDK's MCP server of the benchmarks (bench/mcp_client.py, bench/gateway.py): stateless, JSON answers."""

from __future__ import annotations

import logging
import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("bench")


@server.tool()
def echo(text: str) -> str:
    """Answer the text."""
    return text


if __name__ == "__main__":
    logging.getLogger("mcp").setLevel(logging.WARNING)
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=120,
        # uvicorn's own defaults, named, as for every bench server (see _raw_mcp_server.py).
        http="h11",
        loop="asyncio",
    )
