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


TYPED: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
    "required": ["text"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("code", "mistake"),
    [
        (
            'await tools.ecko({"text": "a"})',
            "line 2: Object of type `Tools` has no attribute `ecko` [unresolved-attribute]",
        ),
        (
            'await tools.echo({"times": 2})',
            "line 2: Missing required key 'text' in TypedDict `EchoInput` constructor"
            " [missing-typed-dict-key]",
        ),
        (
            'x = 1\nawait tools.echo({"text": "a", "times": "twice"})',
            'line 3: Invalid argument to key "times" with declared type `int` on TypedDict'
            ' `EchoInput`: value of type `Literal["twice"]` [invalid-argument-type]',
        ),
    ],
)
async def test_type_checked_code_with_a_mistake_is_a_code_error_and_no_tool_runs(
    monty: at.MontyRuntime, code: str, mistake: str
) -> None:
    ran: list[JsonObject] = []

    async def recorded(input: JsonObject) -> JsonValue:
        ran.append(input)
        return None

    toolkit = Toolkit.from_entries(
        [
            ToolEntry(
                tool=Tool(name="echo", description="Echo.", input_schema=TYPED), handler=echo
            ),
            ToolEntry(
                tool=Tool(name="note", description="Note.", input_schema=SAY), handler=recorded
            ),
        ]
    )
    code = 'await tools.note({"text": "before"})\n' + code
    presented = at.code_mode(toolkit, monty, type_check=True)
    failure = at.Failure.from_json(await presented.call("execute", {"code": code}))
    assert failure is not None
    assert failure.code == "CodeError"
    assert failure.message.startswith(
        "The code does not type-check against the tools' declarations, so nothing ran:\n"
    )
    assert mistake in failure.message
    assert ran == []
    # without the check, the code runs up to its mistake
    await at.code_mode(toolkit, monty).call("execute", {"code": code})
    assert ran == [{"text": "before"}]


async def test_type_checked_code_that_is_right_runs(monty: at.MontyRuntime) -> None:
    presented = at.code_mode(TOOLKIT, monty, type_check=True)
    code = (
        'one = await tools.my_echo({"text": "a"})\n'
        'two = await tools["my-echo"]({"text": "b"})\n'
        "try:\n"
        '    await tools.bad({"text": "c"})\n'
        "except ToolError as error:\n"
        "    print(str(error))\n"
        "return [one, two]"
    )
    assert await presented.call("execute", {"code": code}) == {
        "result": [{"said": "a"}, {"said": "b"}],
        "logs": ["CallFailedError: the printer is on fire"],
    }


async def test_code_calling_a_tool_split_out_for_approval_is_told_to_call_it_directly(
    monty: at.MontyRuntime,
) -> None:
    failure = at.Failure.from_json(await run(monty, 'await tools.delete({"text": "x"})'))
    assert failure is not None
    assert failure.message == (
        "The code raised RuntimeError: ApprovalRequired: tools.delete needs a person's approval,"
        " so code cannot call it: it is a tool of its own beside `execute`. Call delete directly"
        " (not from code), then use its result in another run. (line 1)"
    )


async def test_more_tool_calls_than_a_run_may_make_is_a_code_error_saying_how_many() -> None:
    with pytest.raises(ValueError, match="max_calls must be a positive whole number"):
        at.MontyRuntime(max_calls=0)
    async with at.MontyRuntime(max_calls=5) as runtime:
        description = at.code_mode(TOOLKIT, runtime).tools["execute"].description
        assert "A run may make at most 5 tool calls." in description
        code = 'for n in range(6):\n    print(n)\n    await tools.my_echo({"text": "a"})'
        failure = at.Failure.from_json(await run(runtime, code))
        assert failure is not None
        assert failure.code == "CodeError"
        assert failure.message.startswith(
            "The code made more than 5 tool calls, the most one run may make, and was stopped."
        )
        assert failure.message.endswith("What it logged before:\n0\n1\n2\n3\n4\n5")
        assert await run(runtime, 'await tools.my_echo({"text": "a"})\nreturn 1') == {
            "result": 1,
            "logs": [],
        }


async def test_monty_makes_a_thousand_calls_in_a_run_by_default(monty: at.MontyRuntime) -> None:
    code = 'for n in range(1000):\n    await tools.my_echo({"text": "a"})\nreturn n'
    assert await run(monty, code) == {"result": 999, "logs": []}
    failure = at.Failure.from_json(await run(monty, code.replace("1000", "1001")))
    assert failure is not None
    assert "more than 1000 tool calls" in failure.message


async def test_calls_the_code_gathers_run_concurrently_in_monty(monty: at.MontyRuntime) -> None:
    both = anyio.Event()
    waiting = 0

    async def meet(input: JsonObject) -> JsonValue:
        nonlocal waiting
        waiting += 1
        if waiting == 2:
            both.set()
        await both.wait()
        return input["text"]

    presented = at.code_mode(Toolkit.from_entries([entry("meet", meet)]), monty)
    code = (
        "import asyncio\n"
        'return await asyncio.gather(tools.meet({"text": "a"}), tools.meet({"text": "b"}))'
    )
    with anyio.fail_after(20):
        assert await presented.call("execute", {"code": code}) == {
            "result": ["a", "b"],
            "logs": [],
        }


async def test_code_in_monty_may_sleep(monty: at.MontyRuntime) -> None:
    code = "import asyncio\nimport time\nawait asyncio.sleep(0.01)\ntime.sleep(0.01)\nreturn 1"
    assert await run(monty, code) == {"result": 1, "logs": []}


async def test_a_multi_line_string_in_monty_keeps_its_text(monty: at.MontyRuntime) -> None:
    code = 'text = """first\n  second\nthird"""\nreturn text'
    assert await run(monty, code) == {"result": "first\n  second\nthird", "logs": []}


async def test_an_integer_too_long_for_json_from_monty_is_a_code_error(
    monty: at.MontyRuntime,
) -> None:
    failure = at.Failure.from_json(await run(monty, "return 10**100000"))
    assert failure is not None
    assert failure.code == "CodeError"
    assert "too long to write as JSON" in failure.message


async def test_execute_on_a_runtime_not_entered_tells_the_host_how_to_fix_it() -> None:
    presented = at.code_mode(TOOLKIT, at.MontyRuntime())
    result = await presented.invoke("execute", {"code": "return 1"})
    assert result.failure is not None
    assert result.failure.message == "The tool source failed."  # the model's side
    assert isinstance(result.error, at.UnknownError)
    assert "enter it (async with at.MontyRuntime() as runtime:)" in str(result.error)
