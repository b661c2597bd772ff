"""A client asks its user: an MCP client that declares elicitation (the official SDK's, given an
``elicitation_callback``) is asked before a tool that needs approval runs, in either era.

The front it calls is served here, with ``at.adapters.ask_client`` as its ``approve``, as the
gateway asks a client; the person is a scripted answer (``input()`` in a program).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import anyio
import mcp_types as types
import uvicorn
from mcp import Client
from mcp.client.session import ClientRequestContext

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


# --8<-- [start:client]
async def ask_me(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    print(params.message)
    answer = "y"  # await anyio.to_thread.run_sync(input, "approve? [y/N] ") in a program
    decision = "approve" if answer.strip().lower() in ("y", "yes") else "deny"
    return types.ElicitResult(action="accept", content={"decision": decision})


async def call(url: str, mode: str) -> None:
    async with Client(url, mode=mode, elicitation_callback=ask_me) as client:
        result = await client.call_tool("tasks__delete_task", {"task_id": 1})
        [answer] = result.content
        assert isinstance(answer, types.TextContent)
        print(mode, answer.text)


# --8<-- [end:client]


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble(
            [at.Member(tasks, await tasks.discover())],
            lambda source, d: "approve" if d.annotations.destructive else "allow",
        )
        front = at.adapters.mcp_server(toolkit, name="tasks", approve=at.adapters.ask_client)
        with socket.create_server(("127.0.0.1", 0)) as listener:
            server = uvicorn.Server(
                uvicorn.Config(front.streamable_http_app(), log_level="warning")
            )
            async with anyio.create_task_group() as group:
                group.start_soon(server.serve, [listener])
                url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
                for mode in ("legacy", "2026-07-28"):
                    await call(url, mode)
                server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
