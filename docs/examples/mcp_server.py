"""A toolkit served as an MCP server, its policy intact, and reached here by an MCP client."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import anyio
import httpx
import uvicorn

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        members = [at.Member(tasks, await tasks.discover())]
        toolkit = at.assemble(
            members, lambda source, d: "block" if d.annotations.destructive else "allow"
        )
        # --8<-- [start:front]
        front = at.adapters.mcp_server(
            toolkit,  # at.assemble(...), at.tool_search(...), at.code_mode(...)
            name="host-tools",
            version="1.0",
            approve=lambda name, input: False,  # as a Session's: asked before an approved tool
            timeout=60.0,  # as a Session's: seconds a call may run
            members=members,  # to list each tool with its source's hints
        )
        app = front.streamable_http_app()  # a Starlette ASGI app, MCP at /mcp
        # or, in a process an MCP client starts: anyio.run(front.run_stdio)
        # --8<-- [end:front]
        with socket.create_server(("127.0.0.1", 0)) as listener:
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
            async with anyio.create_task_group() as group:
                group.start_soon(server.serve, [listener])
                url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
                # --8<-- [start:client]
                async with httpx.AsyncClient() as client:
                    served = at.mcp.http(name="host", url=url, client=client)
                    async with served.lifespan():
                        print([d.name for d in await served.discover()])  # no delete_task
                        print(await served.call("tasks__list_tasks", {}))
                # --8<-- [end:client]
                server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
