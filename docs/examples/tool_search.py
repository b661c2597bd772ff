"""Tool search: a toolkit presented as two tools, tool_search and tool_call; and the
presentation functions that make a toolkit of some tools of others."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble([at.Member(tasks, await tasks.discover())], lambda s, d: "allow")
        # --8<-- [start:search]
        presented = at.tool_search(toolkit, limit=5)
        print(list(presented.tools))
        async with at.Session(presented, approve=lambda name, input: False) as session:
            found = await session.call("tool_search", {"query": "remove a task", "limit": 1})
            print(json.dumps(found))
            result = await session.call("tool_call", {"name": "tasks__list_tasks", "input": {}})
            print(json.dumps(result))
        # --8<-- [end:search]

        # --8<-- [start:hybrid]
        tools = list(toolkit.tools.values())
        ranker = at.presentation.HybridRanker.with_wordllama(tools)  # the `embeddings` extra
        # or any embedding, e.g. sentence-transformers':
        #   at.presentation.HybridRanker(tools, lambda texts: model.encode(texts), weight=0.5)
        hybrid = at.tool_search(toolkit, ranker=ranker)
        async with at.Session(hybrid, approve=lambda name, input: False) as session:
            found = await session.call(
                "tool_search", {"query": "what is on my to-do list", "limit": 1}
            )
            assert isinstance(found, dict)
            assert isinstance(found["tools"], list)
            print([tool["name"] for tool in found["tools"] if isinstance(tool, dict)])
        # --8<-- [end:hybrid]

        # --8<-- [start:presentation]
        reading = at.presentation.restrict(toolkit, ["tasks__list_tasks", "tasks__weekly_report"])
        both = at.presentation.merge(reading, toolkit)  # one tool held by both is taken once
        print(list(both.tools))
        print(await at.presentation.call(reading, "tasks__list_tasks", {}))  # JSON, or raises
        try:
            await at.presentation.call(reading, "tasks__add_task", {"title": "Sweep"})
        except at.Failure as failure:
            print(failure.code, failure.message)
        # --8<-- [end:presentation]


if __name__ == "__main__":
    anyio.run(main)
