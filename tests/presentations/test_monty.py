"""Code mode on Monty (the real sandbox, in subprocess workers): the same cases end to end."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")

# Monty's async client runs on asyncio only
pytestmark = pytest.mark.anyio

SAY: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


async def echo(input: JsonObject) -> JsonValue:
    return {"said": input["text"]}


async def failing(input: JsonObject) -> JsonValue:
    raise at.CallFailedError(source="s", message="the printer is on fire")


def entry(name: str, handler: object = echo, *, approval: bool = False) -> ToolEntry:
    return ToolEntry(
        tool=Tool(
            name=name, description=f"The tool {name}.", input_schema=SAY, needs_approval=approval
        ),
        handler=handler,  # type: ignore[arg-type]
    )


TOOLKIT = Toolkit.from_entries(
    [entry("my-echo"), entry("bad", failing), entry("delete", approval=True)]
)


@pytest.fixture
async def monty() -> AsyncIterator[at.MontyRuntime]:
    async with at.MontyRuntime() as runtime:
        yield runtime


async def run(runtime: at.MontyRuntime, code: str, **options: float) -> JsonValue:
    presented = at.code_mode(TOOLKIT, runtime, **options)  # type: ignore[arg-type]
    return await presented.call("execute", {"code": code})


async def test_code_in_monty_calls_tools_by_identifier_and_exact_name(
    monty: at.MontyRuntime,
) -> None:
    code = (
        'one = await tools.my_echo({"text": "a"})\n'
        'two = await tools["my-echo"]({"text": "b"})\n'
        'print("two calls")\n'
        "return [one, two]"
    )
    assert await run(monty, code) == {
        "result": [{"said": "a"}, {"said": "b"}],
        "logs": ["two calls"],
    }


async def test_code_in_monty_that_returns_nothing_gives_null(monty: at.MontyRuntime) -> None:
    assert await run(monty, "x = 1") == {"result": None, "logs": []}


async def test_code_in_monty_catches_a_tool_error(monty: at.MontyRuntime) -> None:
    code = (
        "caught = []\n"
        "try:\n"
        '    await tools.bad({"text": "x"})\n'
        "except ToolError as error:\n"
        "    caught.append(str(error))\n"
        "try:\n"
        '    await tools.my_echo({"txt": "x"})\n'
        "except ToolError as error:\n"
        "    caught.append(str(error).split(':')[0])\n"
        "return caught"
    )
    assert await run(monty, code) == {
        "result": ["CallFailedError: the printer is on fire", "InvalidInputError"],
        "logs": [],
    }


async def test_code_in_monty_that_raises_is_a_code_error_with_its_logs(
    monty: at.MontyRuntime,
) -> None:
    assert await run(monty, 'print("before")\n1 / 0') == {
        "isFailure": True,
        "code": "CodeError",
        "message": "The code raised ZeroDivisionError: division by zero (line 2)\n"
        "What it logged before:\nbefore",
        "retryable": False,
    }


async def test_code_in_monty_that_does_not_parse_is_a_code_error(monty: at.MontyRuntime) -> None:
    failure = at.Failure.from_json(await run(monty, "def f(:\n    pass"))
    assert failure is not None
    assert failure.code == "CodeError"


async def test_a_tool_that_needs_approval_is_not_reachable_from_monty(
    monty: at.MontyRuntime,
) -> None:
    for code in ['await tools.delete({"text": "x"})', 'await tools["delete"]({"text": "x"})']:
        failure = at.Failure.from_json(await run(monty, code))
        assert failure is not None
        assert failure.code == "CodeError"


@pytest.mark.parametrize(
    "code",
    [
        "return open('/etc/hostname').read()",
        "import os\nreturn os.getenv('HOME')",
        "import os\nreturn os.listdir('/')",
        "return __import__('os')",
        "import subprocess",
        "import socket",
    ],
)
async def test_code_in_monty_reaches_nothing_but_tools(monty: at.MontyRuntime, code: str) -> None:
    failure = at.Failure.from_json(await run(monty, code))
    assert failure is not None
    assert failure.code == "CodeError"


async def test_a_result_too_large_from_monty(monty: at.MontyRuntime) -> None:
    failure = at.Failure.from_json(await run(monty, "return 'x' * 500", max_result_length=100))
    assert failure is not None
    assert failure.code == "ResultTooLarge"


async def test_code_in_monty_that_runs_too_long_is_a_timeout_and_stops(
    monty: at.MontyRuntime,
) -> None:
    started = anyio.current_time()
    failure = at.Failure.from_json(await run(monty, "while True:\n    pass", timeout=0.3))
    assert failure is not None
    assert failure.code == "Timeout"
    assert anyio.current_time() - started < 5
    # the pool gives the next run a worker of its own
    assert await run(monty, "return 1 + 1") == {"result": 2, "logs": []}


async def test_a_slow_tool_call_counts_in_monty_timeout(monty: at.MontyRuntime) -> None:
    async def slow(input: JsonObject) -> JsonValue:
        await anyio.sleep(30)
        return None  # pragma: no cover

    presented = at.code_mode(Toolkit.from_entries([entry("slow", slow)]), monty, timeout=0.3)
    failure = at.Failure.from_json(
        await presented.call("execute", {"code": 'await tools.slow({"text": "x"})'})
    )
    assert failure is not None
    assert failure.code == "Timeout"


async def test_running_outside_the_block_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await at.MontyRuntime().run("return 1", [], echo)  # type: ignore[arg-type]
