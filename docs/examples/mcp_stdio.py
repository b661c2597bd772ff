"""An MCP server over stdio as a source: the process starts with its actor and ends with it."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    tasks = at.mcp.stdio(
        name="tasks",
        command=sys.executable,  # any command: "npx", "uvx", a path
        args=[str(SERVER)],
        env={"LOG_LEVEL": "info"},  # all it gets of the host's environment besides PATH, HOME...
    )
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(tasks)  # the process starts with the actor
        for definition in await ref.discover():
            print(definition.name, definition.annotations.read_only)
        print(await ref.call("list_tasks", {}))
    # Leaving the runtime ended the process: stdin closed, then terminate, then kill, each
    # waited for at most end_timeout seconds.


if __name__ == "__main__":
    anyio.run(main)
