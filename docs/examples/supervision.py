"""The runtime: every source a supervised actor, its calls bounded, a caller's share kept."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def given_up(ref: at.ActorRef, error: BaseException) -> None:
    print(f"{ref.name} was given up: {error!r}")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    # --8<-- [start:spawn]
    async with at.Runtime(grace=5.0, on_give_up=given_up) as runtime:  # the root supervisor
        tasks = await runtime.spawn(
            source,
            max_concurrency=64,  # calls at once, inline and in workers together
            mailbox_size=256,  # requests that may wait; the next caller waits to send
            call_timeout=30.0,  # seconds a call may run in the actor
            restart=at.Restart(policy="permanent", intensity=3, period=5.0),
            max_per_caller=8,  # one caller's calls in the actor at once
        )
        print(tasks.statistics())
        with at.calling_as("session-1"):  # any text that tells callers apart; never logged
            print(await tasks.call("list_tasks", {}))
        print([ref.name for ref in runtime.children()])
        await runtime.stop(tasks)  # stop one; it is forgotten
        print(tasks.statistics().state, runtime.children())
    # --8<-- [end:spawn]


if __name__ == "__main__":
    anyio.run(main)
