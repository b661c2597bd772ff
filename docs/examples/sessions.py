"""A harness's turn: a Session runs the model's calls, asks before those that need it, and says
what failed and how far a call has got."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble(
            [at.Member(tasks, await tasks.discover())],
            lambda source, d: "approve" if d.annotations.destructive else "allow",
        )

        # --8<-- [start:session]
        async def approve(name: str, input: at.JsonObject) -> bool:
            return input.get("task_id") != 2  # a person would be asked here

        def on_error(name: str, error: at.ToolSourceError) -> None:
            # The host reads what failed (the model reads only the failure's JSON).
            print(f"{name} failed: {type(error).__name__}: {error.message}")

        def on_progress(name: str, progress: at.Progress) -> None:
            print(f"{name}: {progress.progress}/{progress.total} {progress.message}")

        async with at.Session(
            toolkit, approve=approve, on_error=on_error, on_progress=on_progress, timeout=60.0
        ) as session:
            print(await session.call("tasks__weekly_report", {}))
            answers: dict[int, at.JsonValue] = {}

            async def delete(task_id: int) -> None:
                answers[task_id] = await session.call("tasks__delete_task", {"task_id": task_id})

            async with anyio.create_task_group() as group:  # the calls of one turn, together
                for task_id in (1, 2, 7):
                    group.start_soon(delete, task_id)
            for task_id, answer in sorted(answers.items()):
                print(task_id, answer)
            print(await session.call("tasks__delete_task", {"task_id": "one"}))
        # --8<-- [end:session]


if __name__ == "__main__":
    anyio.run(main)
