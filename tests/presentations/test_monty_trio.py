"""Monty under a host on trio: its asyncio client runs on a loop of its own, in a thread."""

from __future__ import annotations

import threading

import pytest
import trio
import trio.lowlevel

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")


async def echo(input: JsonObject) -> JsonValue:
    await trio.lowlevel.checkpoint()  # a tool of the host's, on the host's loop
    return input


def tools() -> Toolkit:
    def entry(name: str, approval: bool) -> ToolEntry:
        schema: JsonObject = {"type": "object"}
        tool = Tool(name=name, description=name, input_schema=schema, needs_approval=approval)
        return ToolEntry(tool=tool, handler=echo)

    return Toolkit.from_entries([entry("echo", False), entry("delete", True)])


CODE = """
import asyncio
both = await asyncio.gather(tools.echo({"n": 1}), tools.echo({"n": 2}))
print("gathered")
kept = await tools.delete({"path": "a", "ok": True})
try:
    await tools.delete({"path": "b"})
except ToolError as error:
    return [both, kept, str(error).split(":")[0]]
"""


def monty_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "amends-toolkit-monty"]


def test_code_mode_runs_in_monty_under_trio_and_asks_a_person_in_the_run() -> None:
    async def main() -> JsonValue:
        async with at.MontyRuntime(max_processes=1) as runtime:
            assert monty_threads() == ["amends-toolkit-monty"]
            presented = at.code_mode(tools(), runtime, approval="ask")

            async def approve(name: str, input: JsonObject) -> bool:
                await trio.lowlevel.checkpoint()
                return input.get("ok") is True

            async with at.Session(presented, approve=approve) as session:
                answer = await session.call("execute", {"code": CODE})
        return answer

    assert trio.run(main) == {
        "result": [[{"n": 1}, {"n": 2}], {"path": "a", "ok": True}, "ApprovalDenied"],
        "logs": ["gathered"],
    }
    assert monty_threads() == []


def test_a_run_under_trio_that_loops_forever_stops_at_its_timeout() -> None:
    async def main() -> tuple[JsonValue, JsonValue, float]:
        async with at.MontyRuntime(max_processes=1) as runtime:
            presented = at.code_mode(tools(), runtime, timeout=0.5)
            started = trio.current_time()
            stopped = await presented.call("execute", {"code": "while True:\n    pass"})
            took = trio.current_time() - started
            with trio.fail_after(20):  # the pool's one worker was given back, or replaced
                after = await presented.call("execute", {"code": "return 1 + 1"})
            return stopped, after, took

    stopped, after, took = trio.run(main)
    failure = at.Failure.from_json(stopped)
    assert failure is not None
    assert failure.code == "Timeout"
    assert took < 15  # its timeout is 0.5 s: not forever, with room for a loaded machine
    assert after == {"result": 2, "logs": []}
