"""The README's quick start: a host calls a tool of an MCP server, which this file starts itself."""

from __future__ import annotations

import json
import socket

import anyio
import httpx
import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth import StaticTokenVerifier

import amends_toolkit as at

TOKEN = "a-token-only-the-host-knows"


async def turn(url: str, token: str) -> None:
    # The client carries the server's credentials; the source never sees them.
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client,
        at.Runtime() as runtime,  # a supervisor of actors
    ):
        tasks = await runtime.spawn(at.mcp.http(name="tasks", url=url, client=client))
        # The catalog: what the source has now, which a host stores and refreshes.
        definitions = await tasks.discover()
        stored = at.catalog.dump(definitions)  # JSON data

        # The toolkit of a turn: the tools that read, and none that write, as this host decides.
        toolkit = at.assemble(
            [at.Member(tasks, at.catalog.load(list[at.ToolDefinition], stored))],
            lambda source, d: "allow" if d.annotations.read_only else "block",
        )
        print(list(toolkit.tools))
        # Every outcome is JSON the model reads: an answer, or a Failure.
        print(json.dumps(await toolkit.call("tasks__list_tasks", {})))
        print(json.dumps(await toolkit.call("tasks__delete_task", {"task_id": 1})))  # blocked


# The server's side, here so that this file runs as it is: an MCP server that asks for the token.
tasks_server = FastMCP("tasks", auth=StaticTokenVerifier(tokens={TOKEN: {"client_id": "host"}}))


@tasks_server.tool(annotations={"readOnlyHint": True})
def list_tasks() -> list[str]:
    """List the tasks."""
    return ["Water the plants", "Buy bread"]


@tasks_server.tool(annotations={"destructiveHint": True})
def delete_task(task_id: int) -> str:
    """Delete a task for good."""
    return f"deleted task {task_id}"


async def main() -> None:
    # Listening before the server starts, so the host's first request waits for it.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = uvicorn.Server(uvicorn.Config(tasks_server.http_app(), log_level="warning"))
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            await turn(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp", TOKEN)
            server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
