"""A hostile model's code in code mode (Monty): what it sends is bounded, the CPU work it makes
runs off the event loop, runaway runs leave workers to others, and the sandbox holds."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._json import input_refusal
from amends_toolkit.cli._config import load_config
from amends_toolkit.cli._gateway import Gateway
from amends_toolkit.cli._output import Output
from amends_toolkit.presentations import CodeTools, Finished, Paused, _code, _code_runtime, _monty
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit, _validation

pytest.importorskip("pydantic_monty")

pytestmark = pytest.mark.anyio

PATH: JsonObject = {
    "type": "object",
    "properties": {"path": {"type": "string", "maxLength": 5}},
    "required": ["path"],
    "additionalProperties": False,
}


class Deleting:
    """``delete`` (needs approval, its path at most 5 characters); every run recorded."""

    def __init__(self, schema: JsonObject = PATH) -> None:
        self.ran: list[JsonValue] = []
        self.schema = schema

    async def delete(self, input: JsonObject) -> JsonValue:
        self.ran.append(input)
        return {"deleted": input["path"]}

    def tools(self) -> CodeTools:
        tool = Tool(name="delete", description="", input_schema=self.schema, needs_approval=True)
        entry = ToolEntry(tool=tool, handler=self.delete)
        return CodeTools(Toolkit.from_entries([entry]), approval="ask")


DELETE = """
try:
    return await tools.delete({"path": "a.txt"})
except ToolError as error:
    return str(error)
"""


async def paused_delete(tools: CodeTools) -> Paused:
    async with at.MontyRuntime(max_processes=1) as runtime:
        paused = await runtime.start(DELETE, tools.names, tools.call, approval=tools)
    assert isinstance(paused, Paused)
    assert [(call.name, call.input) for call in paused.calls] == [("delete", {"path": "a.txt"})]
    return paused


def tampered(paused: Paused, *, name: str | None = None, input: JsonValue = None) -> Paused:
    """The paused run as if its bytes had been edited where they were kept."""
    head, _, snapshot = paused.dump().partition(b"\n")
    data = json.loads(head)
    if name is not None:
        data["calls"][0][1] = name
    if input is not None:
        data["calls"][0][2] = input
    return Paused.load(json.dumps(data).encode() + b"\n" + snapshot)


@pytest.mark.parametrize(
    "how", ["bytes edited while kept", "the tool's schema tightened before the resume"]
)
async def test_a_resumed_call_is_checked_against_the_tools_schema_as_a_first_call_is(
    how: str,
) -> None:
    if how == "bytes edited while kept":
        files = Deleting()
        input: JsonValue = {"path": "../../etc", "all": True}
        paused = tampered(await paused_delete(files.tools()), input=input)
    else:  # paused over a catalog that took any path; resumed over one that takes 3 characters
        paused = await paused_delete(Deleting({"type": "object"}).tools())
        files = Deleting({**PATH, "properties": {"path": {"type": "string", "maxLength": 3}}})
    tools = files.tools()
    answer = await tools.answer(paused.calls[0], approved=True)  # a person approved
    assert isinstance(answer, at.presentations.ToolError)
    assert answer.code == "InvalidInputError"
    async with at.MontyRuntime(max_processes=1) as runtime:
        done = await runtime.resume(paused, [answer], tools.call, approval=tools)
    assert isinstance(done, Finished)
    assert isinstance(done.value, str)
    assert done.value.startswith(
        "InvalidInputError: The input does not match the tool's parameters"
    )
    assert files.ran == []  # the tool never saw the input its schema refuses


async def test_a_resumed_call_of_a_name_the_code_may_not_call_is_not_found() -> None:
    files = Deleting()
    paused = tampered(await paused_delete(files.tools()), name="drop_everything")
    answer = await files.tools().answer(paused.calls[0], approved=True)
    assert isinstance(answer, at.presentations.ToolError)
    assert answer.code == "NotFoundError"
    assert files.ran == []


async def test_a_resumed_call_with_a_valid_input_runs() -> None:
    files = Deleting()
    tools = files.tools()
    paused = await paused_delete(tools)
    answer = await tools.answer(paused.calls[0], approved=True)
    assert answer == {"deleted": "a.txt"}
    assert files.ran == [{"path": "a.txt"}]


# Code: a size limit, and the work of making it ready off the event loop.

UPSTREAM = Path(__file__).parents[1] / "cli" / "upstream.py"


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_megabytes_of_code_through_the_gateway_are_refused_before_anything_reads_them(
    tmp_path: Path,
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "grower"
stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]
env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}

[policy]
allow = ["grower__add"]

[serve]
port = 0
presentation = "code"

[auth]
type = "none"
"""
    )
    gateway = Gateway(load_config(config), output=Output())
    # 3.6 MB, under the front's 4 MiB body: 12 s of tokenizing on the event loop it was
    code = "x = [" + "1, " * 1_200_000 + "]\nreturn len(x)"
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(gateway.run)
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
            listed = (await client.list_tools()).tools
            assert listed[0].input_schema["properties"]["code"]["maxLength"] == 100_000
            refused = await client.call_tool("execute", {"code": code})
            assert refused.is_error
            message = text(refused)
            assert message.startswith("The input does not match the tool's parameters: at 'code'")
            assert message.endswith("is longer than 100000 characters.")
            assert len(message) <= 500
            added = await client.call_tool(
                "execute", {"code": 'return await tools.grower__add({"a": 2, "b": 3})'}
            )
            assert '"result": 5' in text(added)
        gateway.stop(reason="the test is done")


def nothing() -> Toolkit:
    return Toolkit.from_entries([])


async def test_code_of_the_length_allowed_runs_and_one_character_more_is_refused() -> None:
    with pytest.raises(ValueError, match="max_code_length must be a positive whole number"):
        at.code_mode(nothing(), at.InProcessRuntime(), max_code_length=0)
    presented = at.code_mode(nothing(), at.InProcessRuntime(), max_code_length=20)
    code = "return 1" + " " * 12
    assert await presented.call("execute", {"code": code}) == {"result": 1, "logs": []}
    failure = at.Failure.from_json(await presented.call("execute", {"code": code + " "}))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert failure.message.endswith("is longer than 20 characters.")


class Meeting:
    """Stands in for a step a run takes: it returns only once a task of the event loop has run
    while it was under way, which it cannot if it holds the loop."""

    def __init__(self, step: object) -> None:
        self.step = step
        self.met = threading.Event()
        self.entered = anyio.Event()
        self.loop = threading.get_ident()
        self.token = anyio.lowlevel.current_token()

    def __call__(self, *args: object) -> object:
        assert threading.get_ident() != self.loop, "the step ran on the event loop's thread"
        anyio.from_thread.run_sync(self.entered.set, token=self.token)
        assert self.met.wait(30), "no task of the event loop ran while the step was under way"
        return self.step(*args)  # type: ignore[operator]

    async def meet(self) -> None:
        await self.entered.wait()
        self.met.set()


@pytest.mark.parametrize("step", ["function_body", "as_json"])
async def test_a_runs_steps_over_the_codes_size_leave_the_event_loop_free(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    meeting = Meeting(getattr(_monty, step))
    monkeypatch.setattr(_monty, step, meeting)
    async with at.MontyRuntime(max_processes=1) as runtime, anyio.create_task_group() as tasks:
        tasks.start_soon(meeting.meet)
        presented = at.code_mode(nothing(), runtime)
        with anyio.fail_after(60):
            answer = await presented.call("execute", {"code": "return [1, 2]"})
        tasks.cancel_scope.cancel()  # the step never ran in a thread, if it did not meet
    assert answer == {"result": [1, 2], "logs": []}
    assert meeting.met.is_set()


SHAPES = {
    "short lines": lambda n: "x = 1\n" * (n // 6),
    "one long line": lambda n: "x = [" + "1," * (n // 2) + "]",
    "a literal over many lines": lambda n: "x = (\n" + "1,\n" * (n // 3) + ")",
    "a string over many lines": lambda n: 'x = """' + "ab\n" * (n // 3) + '"""',
    "a string never closed": lambda n: 'x = """' + "ab\n" * (n // 3),
    "continued lines": lambda n: "x = 1" + " \\\n+ 1" * (n // 7),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_making_code_ready_is_linear_in_its_size(shape: str) -> None:
    def work(size: int) -> float:
        code = SHAPES[shape](size)
        started = time.process_time()
        _code_runtime.function_body(code)
        return time.process_time() - started

    small, large = (min(work(size) for _ in range(3)) for size in (25_000, 100_000))
    # four times the code: about four times the work (quadratic would be sixteen)
    assert large < 10 * max(small, 0.002), (small, large)


def test_an_answers_length_is_measured_as_json_writes_it() -> None:
    values: list[JsonValue] = [
        None,
        True,
        False,
        0,
        -12,
        1.5,
        1e300,
        "",
        'a "quoted" \\ line\n\u2028 é 😀 \x00',
        [],
        {},
        [1, [2, [3, {}]], "x"],
        {"a": {"b": [None, True, {"": ""}]}, "é": -0.0},
        {"result": [{"id": n, "name": f"item {n}"} for n in range(100)], "logs": ["x", "y"]},
    ]
    for value in values:
        length = len(json.dumps(value, ensure_ascii=False))
        assert not _code._longer(value, length), value
        assert _code._longer(value, length - 1), value


def test_an_answers_length_is_measured_within_the_limit_however_large_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = 0  # characters of JSON written to measure the answer

    class Counting:
        @staticmethod
        def dumps(value: object, *, ensure_ascii: bool = True) -> str:
            nonlocal written
            text = json.dumps(value, ensure_ascii=ensure_ascii)
            written += len(text)
            return text

    monkeypatch.setattr(_code, "json", Counting)
    limit = 1_000
    values: list[JsonValue] = [
        [[n] for n in range(400)] * 100,  # type: ignore[list-item]  # 40,000 small lists
        {"x" * n: n for n in range(10_000)},
        ["x" * 10_000_000],
    ]
    for value in values:
        written = 0
        assert _code._longer(value, limit)
        assert written <= 2 * limit


# Runaway runs: each run has a worker of its own, and runs that loop forever share the CPUs.


async def test_runs_that_loop_forever_keep_no_other_run_waiting_for_a_worker() -> None:
    runaways = os.cpu_count() or 1  # Monty's own pool: a worker per CPU
    spinning = 0
    all_spinning = anyio.Event()

    async def spin(input: JsonObject) -> JsonValue:
        nonlocal spinning
        spinning += 1
        if spinning == runaways:
            all_spinning.set()
        return None

    toolkit = Toolkit.from_entries(
        [
            ToolEntry(
                tool=Tool(name="spin", description="", input_schema={"type": "object"}),
                handler=spin,
            )
        ]
    )
    ended: list[JsonValue] = []
    async with at.MontyRuntime() as runtime, anyio.create_task_group() as tasks:
        presented = at.code_mode(toolkit, runtime, timeout=3600)

        async def runaway() -> None:
            code = "await tools.spin({})\nwhile True:\n    pass"
            ended.append(await presented.call("execute", {"code": code}))

        for _ in range(runaways):
            tasks.start_soon(runaway)
        with anyio.fail_after(60):
            await all_spinning.wait()
            # every runaway holds a worker and loops: a one-line run has one too, and a CPU share
            assert await presented.call("execute", {"code": "return 1"}) == {
                "result": 1,
                "logs": [],
            }
        assert ended == []  # they still run
        tasks.cancel_scope.cancel()


def test_the_pool_has_more_workers_than_cpus_and_is_bounded() -> None:
    assert at.MontyRuntime().max_processes == min(64, 4 * (os.cpu_count() or 1))
    assert at.MontyRuntime(max_processes=3).max_processes == 3
    with pytest.raises(ValueError, match="max_processes must be a positive whole number"):
        at.MontyRuntime(max_processes=0)


# Held: bombs and escapes end as a CodeError the model reads, and nothing of the host leaks.

BOMBS_AND_ESCAPES = {
    "a huge string": ("return len('x' * 10**9)", "MemoryError"),
    "a list that grows": ("a = []\nwhile True:\n    a.append([0] * 1000)", "MemoryError"),
    "a string that doubles": ("s = 'x'\nwhile True:\n    s = s + s", "MemoryError"),
    "a huge power": ("return 2 ** (2 ** 40)", "MemoryError"),
    "a huge integer written out": ("return len(str(10 ** (10**6)))", "ValueError"),
    "endless recursion": ("def f(n):\n    return f(n + 1)\nreturn f(0)", "RecursionError"),
    "a literal nested too deep": ("return " + "[" * 5000 + "]" * 5000, "SyntaxError"),
    "open": ("return open('/etc/hostname').read()", "PermissionError"),
    "exec of open": ("exec(\"print(open('/etc/hostname').read())\")", "PermissionError"),
    "eval of an import": ("return eval(\"__import__('os').getcwd()\")", "NameError"),
    "exec of os": ("exec(\"import os\\nprint(os.listdir('/'))\")", "PermissionError"),
    "a secret of the environment": (
        "import os\nreturn os.getenv('AMENDS_TEST_SECRET')",
        "RuntimeError",
    ),
    "os.environ": ("import os\nreturn dict(os.environ)", "RuntimeError"),
    "importlib": ("import importlib\nreturn importlib.import_module('os')", "ModuleNotFoundError"),
    "sys.modules": ("import sys\nreturn list(sys.modules)", "AttributeError"),
    "builtins": ("import builtins\nbuiltins.print = None", "ModuleNotFoundError"),
    "compile": ("return compile('1', 'x', 'eval')", "NameError"),
    "globals": ("return list(globals())", "NameError"),
    "a class's subclasses": (
        "return [c.__name__ for c in ().__class__.__base__.__subclasses__()]",
        "AttributeError",
    ),
    "object's subclasses": ("return str(object.__subclasses__())", "AttributeError"),
    "a method's globals": (
        "return str(tools.__class__.__getitem__.__globals__)",
        "AttributeError",
    ),
    "a function's code": ("def f():\n    pass\nreturn str(f.__code__)", "AttributeError"),
    "an exception's frames": (
        "try:\n    1 / 0\nexcept Exception as e:\n    return str(e.__traceback__.tb_frame)",
        "AttributeError",
    ),
    "the tools' attributes": ("return getattr(tools, '__dict__')", "AttributeError"),
}


@pytest.mark.parametrize("attempt", BOMBS_AND_ESCAPES)
async def test_a_bomb_or_an_escape_ends_as_a_code_error_and_nothing_of_the_host_leaks(
    attempt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AMENDS_TEST_SECRET", "sk-the-hosts-own-secret")
    code, raised = BOMBS_AND_ESCAPES[attempt]
    async with at.MontyRuntime(max_processes=1) as runtime:
        presented = at.code_mode(nothing(), runtime, timeout=120)
        failure = at.Failure.from_json(await presented.call("execute", {"code": code}))
        assert failure is not None
        assert failure.code == "CodeError"
        assert failure.message.startswith(f"The code raised {raised}"), failure.message
        host = [os.getcwd(), sys.executable, SRC, HOSTNAME, os.environ["AMENDS_TEST_SECRET"]]
        assert not any(part in failure.message for part in host if part), failure.message
        # the worker it ran in, killed or not, leaves the pool serving
        assert await presented.call("execute", {"code": "return 1"}) == {"result": 1, "logs": []}


SRC = str(Path(at.__file__).parents[1])
HOSTNAME = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""


async def test_a_tool_call_from_code_with_megabytes_of_input_is_refused_before_it_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[int] = []

    def recorded(value: object, **options: object) -> str | None:
        walked.append(len(json.dumps(value)))
        return input_refusal(value, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(_validation, "input_refusal", recorded)
    ran: list[int] = []

    async def note(input: JsonObject) -> JsonValue:
        ran.append(len(json.dumps(input)))
        return None

    tool = Tool(name="note", description="", input_schema={"type": "object"})
    toolkit = Toolkit.from_entries([ToolEntry(tool=tool, handler=note)])
    code = (
        "try:\n"
        '    await tools.note({"text": "x" * 2_000_000, "more": [[1]] * 1_000_000})\n'
        "except ToolError as error:\n"
        "    print(str(error))\n"
        'await tools.note({"text": "x" * 990_000})\n'
    )
    async with at.MontyRuntime(max_processes=1) as runtime:
        answer = await at.code_mode(toolkit, runtime).call("execute", {"code": code})
    assert answer == {
        "result": None,
        "logs": [
            f"InvalidInputError: The input is more than {_code.MAX_INPUT_LENGTH} characters of"
            " JSON, the most a call from code may send. Send less, or split it over several"
            " calls."
        ],
    }
    assert ran == [990_012]  # the one under the limit
    assert all(length < _code.MAX_INPUT_LENGTH for length in walked)
