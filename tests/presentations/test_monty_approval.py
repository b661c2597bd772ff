"""Approval inside a run on Monty: the run pauses as bytes, a person is asked, the run goes on."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.presentations import CodeTools, Finished, Paused
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")

pytestmark = pytest.mark.anyio

FILE: JsonObject = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}


class Files:
    """Tools over a pretend folder; ``delete`` needs approval; every call is recorded."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, JsonValue]] = []

    async def list(self, input: JsonObject) -> JsonValue:
        self.ran.append(("list", input))
        return ["a.txt", "b.txt"]

    async def delete(self, input: JsonObject) -> JsonValue:
        self.ran.append(("delete", input))
        return {"deleted": input["path"]}

    def toolkit(self) -> Toolkit:
        def tool(name: str, handler: object, approval: bool) -> ToolEntry:
            return ToolEntry(
                tool=Tool(
                    name=name,
                    description=f"{name} files",
                    input_schema={"type": "object"} if name == "list" else FILE,
                    needs_approval=approval,
                ),
                handler=handler,  # type: ignore[arg-type]
            )

        return Toolkit.from_entries(
            [tool("list", self.list, False), tool("delete", self.delete, True)]
        )


TWO_DELETES = """
names = await tools.list({})
done = []
for name in names:
    try:
        done.append(await tools.delete({"path": name}))
    except ToolError as error:
        done.append(str(error))
print("asked twice")
return done
"""


@pytest.fixture
async def monty() -> AsyncIterator[at.MontyRuntime]:
    async with at.MontyRuntime(max_processes=1) as runtime:
        yield runtime


async def test_a_run_asks_each_approval_call_uses_the_approved_and_catches_the_refused(
    monty: at.MontyRuntime,
) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask")
    assert list(presented.tools) == ["execute"]
    assert "async def delete(" in presented.tools["execute"].description
    asked: list[tuple[str, JsonObject]] = []

    async def approve(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return input["path"] == "a.txt"

    async with at.Session(presented, approve=approve) as session:
        answer = await session.call("execute", {"code": TWO_DELETES})
    assert answer == {
        "result": [
            {"deleted": "a.txt"},
            "ApprovalDenied: A person did not approve this call; it did not run.",
        ],
        "logs": ["asked twice"],
    }
    assert asked == [("delete", {"path": "a.txt"}), ("delete", {"path": "b.txt"})]
    assert files.ran == [("list", {}), ("delete", {"path": "a.txt"})]


async def test_the_worker_is_free_while_a_person_thinks(monty: at.MontyRuntime) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask")
    asked, answered = anyio.Event(), anyio.Event()

    async def approve(name: str, input: JsonObject) -> bool:
        asked.set()
        await answered.wait()
        return True

    results: list[JsonValue] = []
    async with at.Session(presented, approve=approve) as session, anyio.create_task_group() as tg:

        async def paused_run() -> None:
            code = 'return await tools.delete({"path": "a.txt"})'
            results.append(await session.call("execute", {"code": code}))

        tg.start_soon(paused_run)
        await asked.wait()
        # one worker in the pool: a run that held it while paused would make this one wait
        with anyio.fail_after(20):
            other = await session.call("execute", {"code": "return await tools.list({})"})
        assert other == {"result": ["a.txt", "b.txt"], "logs": []}
        answered.set()
    assert results == [{"result": {"deleted": "a.txt"}, "logs": []}]


async def test_a_person_waited_for_counts_in_no_timeout(monty: at.MontyRuntime) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask", timeout=1.0)

    async def approve(name: str, input: JsonObject) -> bool:
        await anyio.sleep(2.0)  # a person, slower than the run and the session may take
        return True

    async with at.Session(presented, approve=approve, timeout=1.0) as session:
        answer = await session.call(
            "execute", {"code": 'return await tools.delete({"path": "a.txt"})'}
        )
    assert answer == {"result": {"deleted": "a.txt"}, "logs": []}


async def test_closing_the_session_while_a_person_is_asked_stops_the_run(
    monty: at.MontyRuntime,
) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask")
    asked = anyio.Event()

    async def approve(name: str, input: JsonObject) -> bool:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("never answered")  # pragma: no cover

    results: list[JsonValue] = []
    async with at.Session(presented, approve=approve) as session, anyio.create_task_group() as tg:

        async def paused_run() -> None:
            code = 'await tools.delete({"path": "a.txt"})\nprint("after")'
            results.append(await session.call("execute", {"code": code}))

        tg.start_soon(paused_run)
        await asked.wait()
        session.close()
    assert results == []
    assert files.ran == []
    # the pool's one worker serves the next run
    with anyio.fail_after(20):
        again = await presented.call("execute", {"code": "return 1"})
    assert again == {"result": 1, "logs": []}


async def test_outside_a_session_no_one_is_asked_and_the_tool_does_not_run(
    monty: at.MontyRuntime,
) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask")
    code = (
        "try:\n"
        '    await tools.delete({"path": "a.txt"})\n'
        "except ToolError as error:\n"
        "    return str(error)"
    )
    answer = await presented.call("execute", {"code": code})
    assert answer == {
        "result": "ApprovalRequired: This call needs a person's approval, and no one can be"
        " asked here (execute runs outside a Session); it did not run.",
        "logs": [],
    }
    assert files.ran == []


GONE = """
names = await tools.list({})
print("listed", len(names))
gone = []
for name in names:
    try:
        gone.append((await tools.delete({"path": name}))["deleted"])
    except ToolError as error:
        gone.append(str(error))
return gone
"""

# Another process, with the same tools, resumes the paused run from its bytes on stdin.
RESUME_ELSEWHERE = """
import json, os, sys
import anyio
import amends_toolkit as at
from amends_toolkit.presentations import CodeTools, Paused
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

async def delete(input):
    print("deleted here", input["path"], file=sys.stderr)
    return {"deleted": input["path"]}

async def main():
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tool = Tool(name="delete", description="", input_schema=schema, needs_approval=True)
    listing = Tool(name="list", description="", input_schema={"type": "object"})
    tools = CodeTools(
        Toolkit.from_entries(
            [ToolEntry(tool=listing, handler=None), ToolEntry(tool=tool, handler=delete)]
        ),
        approval="ask",
    )
    step = Paused.load(sys.stdin.buffer.read())
    async with at.MontyRuntime(max_processes=1) as runtime:
        while isinstance(step, Paused):
            answers = [
                await tools.answer(call, approved=call.input["path"] == "a.txt")
                for call in step.calls
            ]
            step = await runtime.resume(step, answers, tools.call, approval=tools)
    print(json.dumps({"value": step.value, "logs": step.logs}), flush=True)

anyio.run(main)
# pydantic-monty 1.4.0 at times aborts the interpreter as it exits (after the pool has closed,
# in any program, main's too): this process has answered, and leaves without finalizing
os._exit(0)
"""


async def test_a_paused_run_is_bytes_that_another_process_resumes() -> None:
    files = Files()
    tools = CodeTools(files.toolkit(), approval="ask")
    async with at.MontyRuntime(max_processes=1) as runtime:
        paused = await runtime.start(GONE, tools.names, tools.call, approval=tools)
    assert isinstance(paused, Paused)
    assert [(call.name, call.input) for call in paused.calls] == [("delete", {"path": "a.txt"})]
    kept = paused.dump()
    assert files.ran == [("list", {})]  # the runtime is closed, the run is these bytes

    src = str(Path(at.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    resumed = await anyio.run_process(
        [sys.executable, "-c", RESUME_ELSEWHERE], input=kept, check=False, env=env
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert json.loads(resumed.stdout) == {
        "value": ["a.txt", "ApprovalDenied: A person did not approve this call; it did not run."],
        "logs": ["listed 2"],
    }
    assert resumed.stderr.decode().splitlines() == ["deleted here a.txt"]
    assert files.ran == [("list", {})]


async def test_a_paused_run_resumes_in_another_runtime_of_this_process() -> None:
    files = Files()
    tools = CodeTools(files.toolkit(), approval="ask")
    async with at.MontyRuntime(max_processes=1) as first:
        paused = await first.start(GONE, tools.names, tools.call, approval=tools)
    assert isinstance(paused, Paused)
    async with at.MontyRuntime(max_processes=1) as second:
        approved = await tools.answer(paused.calls[0], approved=True)
        step = await second.resume(
            Paused.load(paused.dump()), [approved], tools.call, approval=tools
        )
        assert isinstance(step, Paused)
        refused = await tools.answer(step.calls[0], approved=False)
        done = await second.resume(step, [refused], tools.call, approval=tools)
    assert done == Finished(
        value=["a.txt", "ApprovalDenied: A person did not approve this call; it did not run."],
        logs=["listed 2"],
    )
    assert files.ran == [("list", {}), ("delete", {"path": "a.txt"})]


def test_bytes_that_are_no_paused_run_are_refused() -> None:
    for data in [b"", b"not json\nxx", b'{"calls": 3}\nxx']:
        with pytest.raises(ValueError, match="not a paused run"):
            Paused.load(data)


async def test_approval_calls_the_code_gathers_are_asked_in_turn_in_one_pause(
    monty: at.MontyRuntime,
) -> None:
    files = Files()
    presented = at.code_mode(files.toolkit(), monty, approval="ask")
    asked: list[JsonValue] = []

    def approve(name: str, input: JsonObject) -> bool:
        asked.append(input["path"])
        return True

    code = (
        "import asyncio\n"
        "both = await asyncio.gather(\n"
        '    tools.delete({"path": "a.txt"}), tools.list({}), tools.delete({"path": "b.txt"})\n'
        ")\n"
        'print("gathered", len(both))\n'
        "return both[3]"
    )
    async with at.Session(presented, approve=approve) as session:
        failure = at.Failure.from_json(await session.call("execute", {"code": code}))
    assert asked == ["a.txt", "b.txt"]
    assert failure is not None
    # a failure after the run resumed still names its line in the code
    assert failure.message == (
        "The code raised IndexError: list index out of range (line 6)\n"
        "What it logged before:\ngathered 3"
    )
