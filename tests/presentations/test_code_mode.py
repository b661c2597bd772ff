"""Code mode on the in-process runtime: every rule of ``execute``, on any event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import anyio
import httpx
import pytest
from fastmcp import FastMCP

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8000"
SAY: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to say."}},
    "required": ["text"],
    "additionalProperties": False,
}


async def echo(input: JsonObject) -> JsonValue:
    return {"said": input["text"]}


async def failing(input: JsonObject) -> JsonValue:
    raise at.CallFailedError(source="s", message="the printer is on fire")


async def sleepy(input: JsonObject) -> JsonValue:
    await anyio.sleep(25)
    return "awake"


def kit(*entries: ToolEntry) -> Toolkit:
    return Toolkit.from_entries(entries)


def entry(name: str, handler: object = echo, *, approval: object = False) -> ToolEntry:
    return ToolEntry(
        tool=Tool(
            name=name,
            description=f"The tool {name}.",
            input_schema=SAY,
            needs_approval=approval,  # type: ignore[arg-type]
        ),
        handler=handler,  # type: ignore[arg-type]
    )


async def execute(toolkit: Toolkit, code: str, **options: float) -> JsonValue:
    presented = at.code_mode(toolkit, at.InProcessRuntime(), **options)  # type: ignore[arg-type]
    return await presented.call("execute", {"code": code})


async def test_code_calls_a_tool_and_gives_back_its_result_and_logs() -> None:
    code = 'said = await tools.echo({"text": "hi"})\nprint("got", said["said"])\nreturn said'
    assert await execute(kit(entry("echo")), code) == {"result": {"said": "hi"}, "logs": ["got hi"]}


async def test_code_that_returns_nothing_gives_null() -> None:
    assert await execute(kit(entry("echo")), 'print("a\\nb")') == {
        "result": None,
        "logs": ["a", "b"],
    }


async def test_a_name_with_a_dash_is_an_identifier_and_also_reachable_by_its_exact_name() -> None:
    code = (
        'one = await tools.my_echo({"text": "a"})\n'
        'two = await tools["my-echo"]({"text": "b"})\n'
        "return [one, two]"
    )
    assert await execute(kit(entry("my-echo")), code) == {
        "result": [{"said": "a"}, {"said": "b"}],
        "logs": [],
    }


async def test_an_input_the_schema_refuses_raises_tool_error_the_code_catches() -> None:
    code = (
        "try:\n"
        '    await tools.echo({"txt": "hi"})\n'
        "except ToolError as error:\n"
        "    return [error.code, str(error).startswith('InvalidInputError: ')]\n"
    )
    assert await execute(kit(entry("echo")), code) == {
        "result": ["InvalidInputError", True],
        "logs": [],
    }


async def test_a_failed_call_raises_tool_error_with_the_tools_own_words() -> None:
    code = 'try:\n    await tools.bad({"text": "x"})\nexcept ToolError as e:\n    return [e.code, e.message]'
    assert await execute(kit(entry("bad", failing)), code) == {
        "result": ["CallFailedError", "the printer is on fire"],
        "logs": [],
    }


async def test_an_uncaught_tool_error_is_a_code_error() -> None:
    result = await execute(kit(entry("bad", failing)), 'await tools.bad({"text": "x"})')
    failure = at.Failure.from_json(result)
    assert failure is not None
    assert failure.code == "CodeError"
    assert "CallFailedError: the printer is on fire" in failure.message


async def test_code_that_raises_is_a_code_error_with_what_it_logged_before() -> None:
    result = await execute(kit(entry("echo")), 'print("step 1")\nprint("step 2")\n1 / 0')
    assert result == {
        "isFailure": True,
        "code": "CodeError",
        "message": "The code raised ZeroDivisionError: division by zero (line 3)\n"
        "What it logged before:\nstep 1\nstep 2",
        "retryable": False,
    }


async def test_code_that_does_not_compile_is_a_code_error() -> None:
    failure = at.Failure.from_json(await execute(kit(entry("echo")), "def f(:\n    pass"))
    assert failure is not None
    assert failure.code == "CodeError"
    assert failure.message.startswith("The code raised SyntaxError")


async def test_a_result_that_is_not_json_is_a_code_error() -> None:
    failure = at.Failure.from_json(await execute(kit(entry("echo")), "return {1, 2}"))
    assert failure is not None
    assert failure.code == "CodeError"
    assert "not JSON" in failure.message


async def test_a_tuple_is_returned_as_a_list() -> None:
    assert await execute(kit(entry("echo")), "return (1, 'a')") == {"result": [1, "a"], "logs": []}


async def test_a_result_longer_than_the_limit_tells_the_code_to_return_less() -> None:
    toolkit = kit(entry("echo"))
    assert await execute(toolkit, "return 'x' * 60", max_result_length=100) == {
        "result": "x" * 60,
        "logs": [],
    }
    failure = at.Failure.from_json(
        await execute(toolkit, "return 'x' * 200", max_result_length=100)
    )
    assert failure is not None
    assert failure.code == "ResultTooLarge"
    assert "Return less" in failure.message


@pytest.mark.virtual_clock
async def test_a_run_longer_than_the_timeout_is_a_timeout() -> None:
    code = 'await tools.sleepy({"text": "x"})\nawait tools.sleepy({"text": "x"})\nreturn 1'
    toolkit = kit(entry("sleepy", sleepy))
    assert await execute(toolkit, code, timeout=60) == {"result": 1, "logs": []}
    started = anyio.current_time()
    code = "\n".join(['await tools.sleepy({"text": "x"})'] * 3)  # 75 s of tool calls
    failure = at.Failure.from_json(await execute(toolkit, code, timeout=60))
    assert failure is not None
    assert failure.code == "Timeout"
    assert anyio.current_time() - started == pytest.approx(60)


async def test_cancelling_execute_cancels_the_tool_call_and_reports_nothing() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def waits(input: JsonObject) -> JsonValue:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return None  # pragma: no cover

    presented = at.code_mode(kit(entry("waits", waits)), at.InProcessRuntime())
    results: list[JsonValue] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            results.append(
                await presented.call("execute", {"code": 'await tools.waits({"text": "x"})'})
            )

        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert cancelled.is_set()
    assert results == []


async def test_a_tool_that_needs_approval_stands_beside_execute_and_is_not_in_the_code() -> None:
    def ask_if_loud(input: JsonObject) -> bool:
        return input.get("text") == "LOUD"

    toolkit = kit(
        entry("echo"),
        entry("delete", approval=True),
        entry("shout", approval=ask_if_loud),
    )
    presented = at.code_mode(toolkit, at.InProcessRuntime())
    assert list(presented.tools) == ["execute", "delete", "shout"]
    assert presented.tools["execute"].needs_approval is False
    assert presented.entry("delete") == toolkit.entry("delete")
    assert presented.tools["shout"].needs_approval is ask_if_loud
    description = presented.tools["execute"].description
    assert "async def echo(" in description
    assert "def delete" not in description
    assert "def shout" not in description
    assert "beside `execute`, to call directly: delete, shout." in description
    for code in ['await tools.delete({"text": "x"})', 'await tools["shout"]({"text": "x"})']:
        failure = at.Failure.from_json(await presented.call("execute", {"code": code}))
        assert failure is not None
        assert failure.code == "CodeError"
        assert "needs a person's approval, so code cannot call it" in failure.message
        assert "it is a tool of its own beside `execute`" in failure.message

    asked: list[str] = []

    def approve(name: str, input: JsonObject) -> bool:
        asked.append(name)
        return False

    async with at.Session(presented, approve=approve) as session:
        ran = await session.call("execute", {"code": 'return await tools.echo({"text": "a"})'})
        assert ran == {"result": {"said": "a"}, "logs": []}
        refused = at.Failure.from_json(await session.call("delete", {"text": "x"}))
        assert refused is not None
        assert refused.code == "ApprovalDenied"
    assert asked == ["delete"]


async def test_execute_declares_the_tools_it_may_call() -> None:
    description = at.code_mode(kit(entry("my-echo")), at.InProcessRuntime()).tools["execute"]
    assert (
        "class MyEchoInput(TypedDict):\n    # What to say.\n    text: str\n"
        in description.description
    )
    assert "async def my_echo(self, input: MyEchoInput, /) -> Any:" in description.description
    assert description.input_schema["required"] == ["code"]


async def test_execute_refuses_an_input_without_code() -> None:
    failure = at.Failure.from_json(await execute(kit(entry("echo")), None))  # type: ignore[arg-type]
    assert failure is not None
    assert failure.code == "InvalidInputError"


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": float("inf")},
        {"max_result_length": 0},
        {"max_result_length": True},
    ],
)
def test_bad_options_raise_when_presenting(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        at.code_mode(kit(entry("echo")), at.InProcessRuntime(), **options)  # type: ignore[arg-type]


def test_code_mode_is_host_facing() -> None:
    assert {"code_mode", "CodeRuntime", "InProcessRuntime", "MontyRuntime"} <= set(at.__all__)
    runtime: at.CodeRuntime = at.InProcessRuntime()
    assert isinstance(runtime, at.InProcessRuntime)


def pet_server() -> FastMCP:
    server = FastMCP("pets")

    @server.tool(annotations={"readOnlyHint": True})
    def list_pets() -> list[str]:
        """List every pet in the store."""
        return ["rex", "tom", "tib"]

    @server.tool(annotations={"readOnlyHint": True})
    def get_pet(name: str) -> dict[str, str]:
        """Get one pet by its name."""
        return {"name": name, "kind": "dog" if name == "rex" else "cat"}

    @server.tool(annotations={"destructiveHint": True})
    def delete_pet(name: str) -> str:
        """Remove a pet from the store for good."""
        return f"deleted {name}"

    return server


@asynccontextmanager
async def served() -> AsyncIterator[httpx.AsyncClient]:
    app = pet_server().http_app(path="/mcp", json_response=True)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client,
    ):
        yield client


async def test_code_runs_an_mcp_servers_tools_through_the_runtime_and_a_session() -> None:
    def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
        return "allow" if definition.annotations.read_only else "approve"

    code = (
        "cats = []\n"
        "listed = await tools.pets__list_pets({})\n"
        'for name in listed["result"]:  # FastMCP wraps a list in result\n'
        '    pet = await tools.pets__get_pet({"name": name})\n'
        '    if pet["kind"] == "cat":\n'
        '        cats.append(pet["name"])\n'
        'print("looked at", len(cats), "cats")\n'
        "try:\n"
        "    await tools.pets__get_pet({})\n"
        "except ToolError as error:\n"
        "    print(error.code)\n"
        "return cats"
    )
    async with served() as client, at.Runtime() as runtime:
        pets = await runtime.spawn(at.mcp.http(name="pets", url=f"{BASE}/mcp", client=client))
        toolkit = at.assemble([at.Member(pets, await pets.discover())], decide)
        presented = at.code_mode(toolkit, at.InProcessRuntime())
        assert list(presented.tools) == ["execute", "pets__delete_pet"]
        async with at.Session(presented, approve=lambda name, input: True) as session:
            answer = cast("JsonObject", await session.call("execute", {"code": code}))
            assert answer == {
                "result": ["tom", "tib"],
                "logs": ["looked at 2 cats", "InvalidInputError"],
            }
            deleted = await session.call("pets__delete_pet", {"name": "rex"})
            assert "deleted rex" in str(deleted)


def asks_to_delete() -> Toolkit:
    return kit(entry("echo"), entry("delete", approval=True), entry("sleepy", sleepy))


@pytest.mark.virtual_clock
async def test_the_time_a_person_takes_counts_in_neither_the_runs_nor_the_sessions_timeout() -> (
    None
):
    presented = at.code_mode(asks_to_delete(), at.InProcessRuntime(), approval="ask", timeout=60)

    async def approve(name: str, input: JsonObject) -> bool:
        await anyio.sleep(3600)  # an hour: the person was at lunch
        return True

    code = 'return await tools.delete({"text": "x"})'
    async with at.Session(presented, approve=approve, timeout=100) as session:
        started = anyio.current_time()
        assert await session.call("execute", {"code": code}) == {
            "result": {"said": "x"},
            "logs": [],
        }
        assert anyio.current_time() - started == pytest.approx(3600)
        # the run's own time still counts, before and after the person's
        code = (
            'await tools.sleepy({"text": "x"})\n'
            'await tools.delete({"text": "x"})\n'
            'await tools.sleepy({"text": "x"})\n'
            'await tools.sleepy({"text": "x"})'
        )
        started = anyio.current_time()
        failure = at.Failure.from_json(await session.call("execute", {"code": code}))
        assert failure is not None
        assert failure.code == "Timeout"
        assert anyio.current_time() - started == pytest.approx(3660)


async def test_in_ask_mode_the_approval_tools_are_declared_and_asked_about_one_by_one() -> None:
    def shout_needs(input: JsonObject) -> bool:
        return input.get("text") == "LOUD"

    toolkit = kit(
        entry("echo"), entry("delete", approval=True), entry("shout", approval=shout_needs)
    )
    presented = at.code_mode(toolkit, at.InProcessRuntime(), approval="ask")
    assert list(presented.tools) == ["execute"]
    description = presented.tools["execute"].description
    assert "async def delete(" in description
    assert "async def shout(" in description
    asked: list[tuple[str, JsonObject]] = []

    def approve(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return name == "delete"

    code = (
        "said = []\n"
        'said.append(await tools.shout({"text": "quiet"}))\n'
        'said.append(await tools.delete({"text": "gone"}))\n'
        "try:\n"
        '    await tools.shout({"text": "LOUD"})\n'
        "except ToolError as error:\n"
        "    said.append(error.code)\n"
        "try:\n"
        '    await tools.delete({"txt": "no"})\n'
        "except ToolError as error:\n"
        "    said.append(error.code)\n"
        "return said"
    )
    async with at.Session(presented, approve=approve) as session:
        assert await session.call("execute", {"code": code}) == {
            "result": [{"said": "quiet"}, {"said": "gone"}, "ApprovalDenied", "InvalidInputError"],
            "logs": [],
        }
    # no one is asked about a call that needs no approval, nor one whose input is refused
    assert asked == [("delete", {"text": "gone"}), ("shout", {"text": "LOUD"})]


async def test_in_ask_mode_code_reads_that_nobody_decided_and_the_tool_does_not_run() -> None:
    ran: list[JsonObject] = []

    async def delete(input: JsonObject) -> JsonValue:
        ran.append(input)
        return "deleted"

    presented = at.code_mode(
        kit(entry("delete", delete, approval=True)), at.InProcessRuntime(), approval="ask"
    )

    def nobody(name: str, input: JsonObject) -> bool:
        raise at.ApprovalTimedOut("the approvers' page was not opened")

    code = (
        "try:\n"
        '    await tools.delete({"text": "gone"})\n'
        "except ToolError as error:\n"
        "    return [error.code, error.message]"
    )
    async with at.Session(presented, approve=nobody) as session:
        answer = await session.call("execute", {"code": code})
    assert answer == {
        "result": ["ApprovalTimedOut", at.ApprovalTimedOut.default_message],
        "logs": [],
    }
    assert ran == []


async def test_outside_a_session_an_approval_call_from_code_does_not_run() -> None:
    ran: list[JsonObject] = []

    async def delete(input: JsonObject) -> JsonValue:
        ran.append(input)
        return None

    toolkit = kit(entry("delete", delete, approval=True))
    code = 'try:\n    await tools.delete({"text": "x"})\nexcept ToolError as error:\n    return error.code'
    assert await execute(toolkit, code, approval="ask") == {  # type: ignore[arg-type]
        "result": "ApprovalRequired",
        "logs": [],
    }
    assert ran == []


async def test_a_multi_line_string_in_the_code_keeps_its_text() -> None:
    code = (
        'text = """first\n  second\nthird"""\n'
        'other = f"""a\n{1 + 1}\nb"""\n'
        'odd = "one\u2028two"  # a line separator Python reads inside a string\n'
        "return [text, other, odd]"
    )
    assert await execute(kit(entry("echo")), code) == {
        "result": ["first\n  second\nthird", "a\n2\nb", "one\u2028two"],
        "logs": [],
    }


async def test_an_integer_too_long_for_json_is_a_code_error() -> None:
    failure = at.Failure.from_json(await execute(kit(entry("echo")), "return 10**100000"))
    assert failure is not None
    assert failure.code == "CodeError"
    assert "too long to write as JSON" in failure.message


async def test_a_value_nested_too_deep_is_a_code_error() -> None:
    code = "x = []\nfor _ in range(100_000):\n    x = [x]\nreturn x"
    failure = at.Failure.from_json(await execute(kit(entry("echo")), code))
    assert failure is not None
    assert failure.code == "CodeError"
    assert "nested more than 100 levels" in failure.message


async def test_output_past_the_limit_is_dropped_and_counted() -> None:
    code = "for n in range(1000):\n    print('x' * 99)\nreturn 1"
    answer = await execute(kit(entry("echo")), code, max_log_length=1000)
    assert answer == {
        "result": 1,
        "logs": ["x" * 99] * 10
        + ["[99000 more characters of output were dropped: a run keeps 1000; print less]"],
    }


def test_type_check_and_unknown_modes_are_refused_when_presenting() -> None:
    with pytest.raises(ValueError, match="type_check needs a MontyRuntime"):
        at.code_mode(kit(entry("echo")), at.InProcessRuntime(), type_check=True)
    with pytest.raises(ValueError, match='approval must be "split" or "ask"'):
        at.code_mode(kit(entry("echo")), at.InProcessRuntime(), approval="later")  # type: ignore[arg-type]
