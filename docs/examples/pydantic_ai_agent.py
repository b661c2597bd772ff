"""A pydantic-ai agent given an assembled toolkit, unchanged (the `pydantic-ai` extra). The
model here is pydantic-ai's TestModel, which calls every tool it is given, so no key is needed."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

import amends_toolkit as at
from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble(
            [at.Member(tasks, await tasks.discover())],
            lambda source, d: "allow" if d.annotations.read_only else "block",
        )
        # --8<-- [start:agent]
        agent = Agent(TestModel(), toolsets=[ToolkitToolset(toolkit)])
        result = await agent.run("What is there to do this week?")
        print(result.output)
        # --8<-- [end:agent]


if __name__ == "__main__":
    anyio.run(main)
