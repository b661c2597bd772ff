"""Code mode: the model writes Python that calls the tools as functions, in the Monty sandbox."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")

# --8<-- [start:code]
CODE = """
tasks = await tools.tasks__list_tasks({})
plants = [task for task in tasks["result"] if "plants" in task]
print(len(tasks["result"]), "tasks")
return plants
"""

DELETE = """
done = []
for task_id in [1, 2]:
    try:
        done.append(await tools.tasks__delete_task({"task_id": task_id}))
    except ToolError as error:  # the person said no to this one
        done.append(str(error))
return done
"""
# --8<-- [end:code]


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble(
            [at.Member(tasks, await tasks.discover())],
            lambda source, d: "approve" if d.annotations.destructive else "allow",
        )
        # --8<-- [start:run]
        async with at.MontyRuntime() as sandbox:  # the `monty` extra
            presented = at.code_mode(toolkit, sandbox)  # "split": execute, and each approved tool
            print(list(presented.tools))

            async def approve(name: str, input: at.JsonObject) -> bool:
                return input == {"task_id": 1}  # a person would be asked here

            async with at.Session(presented, approve=approve) as session:
                print(json.dumps(await session.call("execute", {"code": CODE})))

            asking = at.code_mode(toolkit, sandbox, approval="ask")  # the run itself asks
            async with at.Session(asking, approve=approve) as session:
                print(json.dumps(await session.call("execute", {"code": DELETE})))
        # --8<-- [end:run]


if __name__ == "__main__":
    anyio.run(main)
