"""A policy: per tool, whether the model may call it, must have each call approved, or is not shown it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


# --8<-- [start:decide]
def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
    """Reading is allowed, deleting needs a person, anything else is not shown."""
    if definition.annotations.read_only:  # a source's claim: fine for reads, not for trust
        return "allow"
    if definition.name.startswith("delete_"):
        return "approve"
    return "block"


# --8<-- [end:decide]


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        # --8<-- [start:assemble]
        toolkit = at.assemble([at.Member(tasks, await tasks.discover())], decide)
        print(list(toolkit.tools))  # add_task is blocked: not shown, not callable
        print(toolkit.tools["tasks__delete_task"].needs_approval)
        print(toolkit.source_tool("tasks__delete_task"))

        # Nobody was asked, so the tool does not run: the model reads why.
        print(json.dumps(await toolkit.call("tasks__delete_task", {"task_id": 1})))
        # The host approved this very call itself.
        print(await toolkit.call("tasks__delete_task", {"task_id": 1}, approved=True))
        # --8<-- [end:assemble]

        # --8<-- [start:session]
        async def approve(name: str, input: at.JsonObject) -> bool:  # a plain function too
            print(f"may the agent run {name} with {json.dumps(input)}? no")
            return False

        async with at.Session(toolkit, approve=approve) as session:
            print(json.dumps(await session.call("tasks__delete_task", {"task_id": 2})))
        # --8<-- [end:session]


if __name__ == "__main__":
    anyio.run(main)
