"""The MCP stdio source against real server processes.

The official SDK's ``MCPServer`` and ``fastmcp`` run as subprocesses (``servers/``), and a
scripted server (``servers/scripted_stdio_server.py``) does what real servers rarely do: crash,
print garbage, ask the client things, never answer, ignore the end of its input. Tests wait for
what a server says on stderr (which the source logs at DEBUG), never for a while.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.actors._mcp_stdio import McpStdioSource

from .logs import listening

SERVERS = Path(__file__).parent / "servers"


def scripted(*args: str, timeout: float = 10.0, end_timeout: float = 2.0) -> McpStdioSource:
    return at.mcp.stdio(
        name="scripted",
        command=sys.executable,
        args=[str(SERVERS / "scripted_stdio_server.py"), *args],
        timeout=timeout,
        end_timeout=end_timeout,
    )


class Stderr(logging.Handler):
    """The lines servers write to stderr, as the source logs them; a test can wait for one."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.bound: float | None = 20.0
        self._changed = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "mcp.stdio_stderr":
            self.lines.append(record.__dict__["line"])
            self._changed.set()
            self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[str], bool]) -> str:
        """The first line that matches; a line that never comes fails the test within
        ``bound`` seconds rather than hang it."""
        with anyio.fail_after(self.bound):
            while True:
                found = next((line for line in self.lines if predicate(line)), None)
                if found is not None:
                    return found
                await self._changed.wait()


@pytest.fixture
def stderr() -> Iterator[Stderr]:
    handler = Stderr()
    with listening(handler):
        yield handler


@asynccontextmanager
async def spawned(source: at.ToolSource, **options: object) -> AsyncIterator[at.ActorRef]:
    async with at.Runtime() as runtime:
        yield await runtime.spawn(source, **options)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# Real servers.


@pytest.mark.anyio
async def test_an_sdk_server_process_lists_runs_fails_and_cancels_its_tools(
    stderr: Stderr, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One process for every check: the SDK takes seconds to import on a small machine.
    monkeypatch.setenv("AMENDS_HOST_SECRET", "not for servers")
    source = at.mcp.stdio(
        name="sdk",
        command=sys.executable,
        args=[str(SERVERS / "mcp_sdk_server.py")],
        env={"AMENDS_GIVEN": "given"},
        cwd=tmp_path,
    )
    async with spawned(source) as sdk:
        definitions = {d.name: d for d in await sdk.discover()}
        assert set(definitions) == {"add", "where", "failing", "slow", "steps"}
        add = definitions["add"]
        assert add.description == "Add two integers."
        assert add.annotations == at.Annotations(title="Add them", read_only=True)
        assert add.input_schema["required"] == ["a", "b"]
        assert definitions["where"].annotations == at.Annotations()
        assert await sdk.call("add", {"a": 2, "b": 3}) == {"result": 5}

        # The given cwd, and env on top of a few host variables: not the host's secrets.
        assert await sdk.call("where", {}) == {
            "cwd": str(tmp_path),
            "given": "given",
            "host": None,
            "path": os.environ["PATH"],
        }

        with pytest.raises(at.CallFailedError) as failed:
            await sdk.call("failing", {})
        assert "the failing tool failed" in failed.value.model_message

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sdk.call, "slow", {})
            await stderr.wait_for(lambda line: line == "slow tool started")
            tasks.cancel_scope.cancel()
        # The server cancels the tool on notifications/cancelled, and goes on serving.
        await stderr.wait_for(lambda line: line == "slow tool ended")
        assert await sdk.call("add", {"a": 1, "b": 1}) == {"result": 2}

        # Progress is asked for and relayed, in order, only when someone listens.
        told: list[tuple[str, at.Progress]] = []
        kit = at.source_toolkit(sdk, list(definitions.values()))
        async with at.Session(
            kit, approve=lambda n, i: True, on_progress=lambda *p: told.append(p)
        ) as s:
            assert await s.call("steps", {}) == {"asked": True}
        assert told == [
            ("steps", at.Progress(progress=n, total=3, message=f"step {n}")) for n in (1, 2, 3)
        ]
        assert await sdk.call("steps", {}) == {"asked": False}
    assert "sdk server starting" in stderr.lines


@pytest.mark.anyio
async def test_a_fastmcp_server_lists_and_runs_its_tools() -> None:
    source = at.mcp.stdio(
        name="fast", command=sys.executable, args=[str(SERVERS / "fastmcp_server.py")]
    )
    async with spawned(source) as fast:
        definitions = {d.name: d for d in await fast.discover()}
        assert set(definitions) == {"greet", "numbers"}
        assert definitions["greet"].annotations == at.Annotations(
            title="Greet", destructive=False, idempotent=True
        )
        assert await fast.call("greet", {"name": "Ada"}) == {"result": "Hello, Ada!"}
        assert await fast.call("numbers", {}) == {"result": [1, 2, 3]}


# The scripted server: sessions, pages, what servers send besides answers.


@pytest.mark.anyio
async def test_tools_are_listed_across_pages_an_empty_cursor_included(stderr: Stderr) -> None:
    async with spawned(scripted()) as source:
        names = [d.name for d in await source.discover()]
    assert names[:3] == ["echo", "garbage", "crash"]
    assert len(names) == 11
    assert "initialize offered 2025-11-25" in stderr.lines


@pytest.mark.anyio
async def test_the_session_version_the_server_answers_is_taken() -> None:
    async with spawned(scripted("version", "2024-11-05")) as source:
        assert await source.call("echo", {"x": 1}) == {"echo": {"x": 1}}


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2026-07-28", "1999-01-01"])
async def test_a_server_answering_initialize_with_a_version_not_spoken_is_unsupported(
    version: str,
) -> None:
    async with spawned(scripted("version", version)) as source:
        with pytest.raises(at.UnsupportedError):
            await source.discover()


@pytest.mark.anyio
async def test_garbage_lines_unmatched_answers_and_notifications_are_let_go(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    async with spawned(scripted()) as source:
        assert await source.call("garbage", {}) == [{"type": "text", "text": "fine"}]
        assert await source.call("echo", {}) == {"echo": {}}
    garbage = [r for r in caplog.records if r.getMessage() == "mcp.stdio_garbage"]
    assert len(garbage) == 2  # the line that is no JSON, and the object that is no JSON-RPC
    assert all("line" not in r.__dict__ for r in garbage)  # the content only at DEBUG


@pytest.mark.anyio
async def test_a_server_ping_is_answered_and_its_other_requests_refused() -> None:
    async with spawned(scripted()) as source:
        answer = await source.call("ping", {})
    assert answer == {"pong": {}, "refused": {"code": -32601, "message": "Method not found"}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("bad", at.InvalidResponseError),
        ("invalid", at.InvalidInputError),
        ("unknown", at.NotFoundError),
        ("failed", at.CallFailedError),
    ],
)
async def test_what_a_server_answers_for_a_call_is_its_reason(
    tool: str, reason: type[at.ToolSourceError]
) -> None:
    async with spawned(scripted()) as source:
        with pytest.raises(reason):
            await source.call(tool, {})
        assert await source.call("echo", {}) == {"echo": {}}


@pytest.mark.anyio
async def test_the_servers_stderr_is_logged_at_debug_each_line_bounded(stderr: Stderr) -> None:
    async with spawned(scripted()) as source:
        await source.call("stderr", {})
        await stderr.wait_for(lambda line: line == "after the long line")
    long = [line for line in stderr.lines if line.startswith("xxx")]
    assert [len(line) for line in long] == [4096, 4096, 10000 - 2 * 4096]


@pytest.mark.anyio
async def test_a_cancelled_call_sends_notifications_cancelled(stderr: Stderr) -> None:
    async with spawned(scripted()) as source:
        await source.discover()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(source.call, "hang", {})
            hanging = await stderr.wait_for(lambda line: line.startswith("hanging "))
            tasks.cancel_scope.cancel()
        request_id = hanging.removeprefix("hanging ")
        await stderr.wait_for(lambda line: line == f"cancelled {request_id}")
        assert await source.call("echo", {}) == {"echo": {}}


@pytest.mark.anyio
async def test_a_call_not_answered_within_timeout_is_unavailable_and_cancelled(
    stderr: Stderr,
) -> None:
    # A real clock: under the virtual one, waiting on a process's pipe lets the clock jump to
    # the deadline before the server could answer anything (the next test uses it for that).
    async with spawned(scripted(timeout=1.0)) as source:
        await source.discover()
        with pytest.raises(
            at.UnavailableError, match=r"no answer within the source\'s timeout of 1 seconds"
        ):
            await source.call("hang", {})
        hanging = await stderr.wait_for(lambda line: line.startswith("hanging "))
        await stderr.wait_for(lambda line: line == f"cancelled {hanging.removeprefix('hanging ')}")


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_server_that_never_answers_is_unavailable_within_timeout(
    stderr: Stderr,
) -> None:
    async with spawned(scripted("mute", timeout=30.0)) as source:
        # Only once the process runs: while it starts, the virtual clock would jump to any
        # deadline there is.
        stderr.bound = None  # under the virtual clock any deadline is reached at once
        await stderr.wait_for(lambda line: line.endswith("in mode mute"))
        with (
            anyio.fail_after(60),
            pytest.raises(at.UnavailableError, match=r"timeout of 30 seconds"),
        ):
            await source.discover()


# Processes: crashes, restarts, the end.


@pytest.mark.anyio
async def test_a_crashed_server_fails_its_calls_and_is_restarted_by_the_supervisor(
    stderr: Stderr,
) -> None:
    async with spawned(scripted()) as source:
        first = await source.call("pid", {})
        with pytest.raises(at.UnavailableError):
            await source.call("crash", {})
        second = await source.call("pid", {})
        assert source.statistics().restarts == 1
    assert isinstance(first, dict)
    assert isinstance(second, dict)
    assert first["pid"] != second["pid"]
    assert not alive(int(str(second["pid"])))


@pytest.mark.anyio
async def test_calls_waiting_on_a_server_that_crashes_are_unavailable(stderr: Stderr) -> None:
    async with spawned(scripted()) as source:
        await source.discover()
        failures: list[BaseException] = []

        async def hang() -> None:
            try:
                await source.call("hang", {})
            except at.UnavailableError as error:
                failures.append(error)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hang)
            tasks.start_soon(hang)
            await stderr.wait_for(lambda line: line.startswith("hanging "))
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(at.UnavailableError):
                await source.call("crash", {})
        assert len(failures) == 2


@pytest.mark.anyio
async def test_a_line_longer_than_the_bound_fails_its_call_and_the_process_goes_on() -> None:
    source = at.mcp.stdio(
        name="scripted",
        command=sys.executable,
        args=[str(SERVERS / "scripted_stdio_server.py")],
        max_answer_bytes=200,
    )
    async with spawned(source) as ref:
        assert await ref.call("echo", {"short": 1}) == {"echo": {"short": 1}}
        with pytest.raises(at.CallFailedError, match="longer than 200 bytes"):
            await ref.call("echo", {"long": "x" * 500})
        assert await ref.call("echo", {"short": 2}) == {"echo": {"short": 2}}
        assert ref.statistics().restarts == 0


@pytest.mark.anyio
async def test_a_server_that_exits_at_once_is_given_up_as_unavailable() -> None:
    source = scripted("exit")
    async with spawned(source, restart=at.Restart(intensity=1, period=60.0)) as ref:
        with anyio.fail_after(30):
            for _ in range(10):
                with pytest.raises(at.UnavailableError):
                    await ref.discover()
                if ref.statistics().state == "failed":
                    break
        assert ref.statistics().state == "failed"
        assert ref.statistics().restarts == 1


@pytest.mark.anyio
async def test_a_command_that_does_not_exist_is_given_up_as_unavailable(tmp_path: Path) -> None:
    source = at.mcp.stdio(name="none", command=str(tmp_path / "no-such-server"))
    async with spawned(source, restart=at.Restart(intensity=0)) as ref:
        with pytest.raises(at.UnavailableError):
            await ref.discover()


@pytest.mark.anyio
async def test_the_server_ends_when_its_stdin_closes_as_the_runtime_stops(
    stderr: Stderr,
) -> None:
    async with spawned(scripted()) as source:
        answer = await source.call("pid", {})
    assert isinstance(answer, dict)
    assert "input ended" in stderr.lines
    assert not alive(int(str(answer["pid"])))


@pytest.mark.anyio
async def test_the_server_runs_in_a_session_of_its_own() -> None:
    # So a terminal's hangup or Ctrl-C never reaches it: its host ends it.
    async with spawned(scripted()) as source:
        answer = await source.call("pid", {})
        assert isinstance(answer, dict)
        pid = int(str(answer["pid"]))
        assert os.getsid(pid) == pid != os.getsid(0)
        assert os.getpgid(pid) == pid


@pytest.mark.anyio
async def test_a_server_that_ignores_stdin_and_sigterm_is_killed(stderr: Stderr) -> None:
    with anyio.fail_after(10):
        async with spawned(scripted("stubborn", end_timeout=0.2)) as source:
            answer = await source.call("pid", {})
            stopping = anyio.current_time()
    # Three steps (stdin closed, SIGTERM, SIGKILL), each waited for at most end_timeout.
    assert anyio.current_time() - stopping < 3 * 0.2 + 1.0
    assert isinstance(answer, dict)
    assert "ignoring SIGTERM" in stderr.lines
    assert not alive(int(str(answer["pid"])))


@pytest.mark.anyio
async def test_a_source_that_is_not_running_says_how_to_run_it() -> None:
    with pytest.raises(RuntimeError, match=r"spawn it on an at\.Runtime"):
        await scripted().discover()


@pytest.mark.anyio
async def test_the_lifespan_can_be_held_without_a_runtime_but_only_once_at_a_time() -> None:
    source = scripted()
    async with source.lifespan():
        assert await source.call("echo", {"a": 1}) == {"echo": {"a": 1}}
        with pytest.raises(RuntimeError, match="running already"):
            async with source.lifespan():
                pass
    async with source.lifespan():
        assert await source.call("echo", {"a": 2}) == {"echo": {"a": 2}}


# Configuration mistakes.


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"name": ""}, ValueError),
        ({"command": ""}, ValueError),
        ({"args": "server.py"}, TypeError),
        ({"args": [1]}, TypeError),
        ({"env": {"KEY": 1}}, TypeError),
        ({"env": ["KEY=1"]}, TypeError),
        ({"cwd": 3}, TypeError),
        ({"timeout": 0}, ValueError),
        ({"timeout": float("inf")}, ValueError),
        ({"timeout": True}, ValueError),
    ],
)
def test_a_bad_option_is_refused_with_the_fix(options: dict[str, object], error: type) -> None:
    arguments: dict[str, object] = {"name": "files", "command": "server", **options}
    with pytest.raises(error, match=r"such as|must"):
        at.mcp.stdio(**arguments)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_concurrent_first_calls_begin_the_session_once(stderr: Stderr) -> None:
    async with spawned(scripted()) as source:
        answers: list[object] = []

        async def ask() -> None:
            answers.append(await source.call("pid", {}))

        async with anyio.create_task_group() as tasks:
            for _ in range(10):
                tasks.start_soon(ask)
        assert len(answers) == 10
        assert len({str(answer) for answer in answers}) == 1  # one process served them all
    assert [line for line in stderr.lines if line.startswith("initialize offered")] == [
        "initialize offered 2025-11-25"
    ]
