"""Approval inside a run on Monty: the run pauses as bytes, a person is asked, the run goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.presentations import Finished, Paused, PendingCall, ToolError
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
    presented = at.code_mode(files.toolkit(), monty, approval="ask", timeout=0.5)

    async def approve(name: str, input: JsonObject) -> bool:
        await anyio.sleep(1.5)  # a person, slower than the run and the session may take
        return True

    async with at.Session(presented, approve=approve, timeout=0.5) as session:
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


class DeleteAsks:
    """An approval that makes ``delete`` wait; no one is asked in the runtime's own tests."""

    def needed(self, name: str, input: JsonObject) -> bool:
        return name == "delete"

    async def ask(self, name: str, input: JsonObject) -> JsonValue:
        raise AssertionError("the host answers, not the runtime")


async def test_a_paused_run_is_bytes_that_another_runtime_resumes() -> None:
    files = Files()
    toolkit = files.toolkit()

    async def call(name: str, input: JsonObject) -> JsonValue:
        return (await toolkit.invoke(name, input)).unwrap()

    code = (
        "names = await tools.list({})\n"
        'print("listed", len(names))\n'
        "gone = []\n"
        "for name in names:\n"
        "    try:\n"
        '        gone.append((await tools.delete({"path": name}))["deleted"])\n'
        "    except ToolError as error:\n"
        "        gone.append(str(error))\n"
        "return gone"
    )
    async with at.MontyRuntime(max_processes=1) as first:
        paused = await first.start(code, ["list", "delete"], call, approval=DeleteAsks())
    assert isinstance(paused, Paused)
    assert paused.calls == (
        PendingCall(id=paused.calls[0].id, name="delete", input={"path": "a.txt"}),
    )
    kept = paused.dump()
    assert isinstance(kept, bytes)
    del paused

    async with at.MontyRuntime(max_processes=1) as second:
        again = Paused.load(kept)
        step = await second.resume(again, [{"deleted": "a.txt"}], call, approval=DeleteAsks())
        assert isinstance(step, Paused)
        assert [pending.input for pending in step.calls] == [{"path": "b.txt"}]
        refusal = ToolError(code="ApprovalDenied", message="no")
        done = await second.resume(Paused.load(step.dump()), [refusal], call, approval=DeleteAsks())
    assert done == Finished(value=["a.txt", "ApprovalDenied: no"], logs=["listed 2"])
    # the host answered the deletes: the tool itself never ran
    assert files.ran == [("list", {})]


def test_bytes_that_are_no_paused_run_are_refused() -> None:
    for data in [b"", b"not json\nxx", b'{"calls": 3}\nxx']:
        with pytest.raises(ValueError, match="not a paused run"):
            Paused.load(data)
