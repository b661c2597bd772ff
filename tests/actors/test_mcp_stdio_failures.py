"""What a host reads when a stdio server will not start or dies: the command and why, the exit
code and the last lines of its stderr (in the error, and in a WARNING log line), while the model
reads only that the source is unavailable.

Every server here is a real process: a command that does not exist, a Python that crashes on
import or is given a script that is not there, and the scripted server crashing mid-call.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.protocols.mcp._stdio import STDERR_TAIL

from .logs import listening

SCRIPTED = Path(__file__).parent / "servers" / "scripted_stdio_server.py"
MODEL = "The tool source is unavailable right now; try again later."


class Warnings(logging.Handler):
    """The WARNING records the library logs; ``said`` is set when a server's stderr says
    ``ready`` (logged at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.said = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "mcp.stdio_stderr" and record.__dict__["line"] == "ready":
            self.said.set()
        if record.levelno >= logging.WARNING:
            self.records.append(record)

    def named(self, event: str) -> list[logging.LogRecord]:
        return [record for record in self.records if record.getMessage() == event]


@pytest.fixture
def warnings() -> Iterator[Warnings]:
    handler = Warnings()
    with listening(handler):
        yield handler


@asynccontextmanager
async def spawned(source: at.ToolSource, intensity: int = 0) -> AsyncIterator[at.ActorRef]:
    async with at.Runtime() as runtime:
        yield await runtime.spawn(source, restart=at.Restart(intensity=intensity, period=60.0))


def python(*args: str) -> at.ToolSource:
    return at.mcp.stdio(name="files", command=sys.executable, args=args, timeout=30.0)


CRASH_ON_IMPORT = (
    "import sys\n"
    "print('files server 1.0 starting', file=sys.stderr)\n"
    "import files_server_dependency_that_is_not_installed\n"
)


@pytest.mark.anyio
async def test_a_command_that_does_not_exist_is_named_with_the_fix(tmp_path: Path) -> None:
    command = str(tmp_path / "no-such-server")
    async with spawned(at.mcp.stdio(name="files", command=command)) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
    message = caught.value.message
    assert message.startswith("the source gave up; its last crash: StartFailed:")
    assert f"could not start the server command {command!r}: No such file or directory" in message
    assert "full path" in message
    assert caught.value.model_message == MODEL


@pytest.mark.anyio
async def test_a_command_that_is_not_executable_says_so(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('a server')\n")
    script.chmod(0o644)  # no execute bit: even root may not run it
    async with spawned(at.mcp.stdio(name="files", command=str(script))) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
    assert f"could not start the server command {str(script)!r}: Permission denied" in str(
        caught.value
    )
    assert "(is it an executable file?)" in str(caught.value)
    assert caught.value.model_message == MODEL


@pytest.mark.anyio
async def test_a_working_directory_that_does_not_exist_is_named(tmp_path: Path) -> None:
    source = at.mcp.stdio(name="files", command=sys.executable, cwd=tmp_path / "gone")
    async with spawned(source) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.call("read", {})
    assert f"its working directory {str(tmp_path / 'gone')!r} does not exist" in str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_server_that_crashes_on_import_gives_its_exit_code_and_stderr(
    warnings: Warnings,
) -> None:
    async with spawned(python("-c", CRASH_ON_IMPORT)) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
    error = caught.value
    assert error.message.startswith(
        "the source crashed while the call ran: ProcessEnded: "
        "the server process closed its output (exit code 1); "
        "the last lines of its stderr:\n  | files server 1.0 starting\n  | Traceback"
    )
    assert error.message.endswith(
        "  | ModuleNotFoundError: No module named 'files_server_dependency_that_is_not_installed'"
    )
    assert error.model_message == MODEL
    assert "ModuleNotFoundError" not in error.to_failure().message
    # The host's logs say it too, at WARNING, the data in fields.
    [ended] = warnings.named("mcp.stdio_ended")
    assert ended.levelno == logging.WARNING
    assert ended.__dict__["source"] == "files"
    assert ended.__dict__["exit"] == "exit code 1"
    assert ended.__dict__["stderr"][0] == "files server 1.0 starting"
    assert ended.__dict__["stderr"][-1].startswith("ModuleNotFoundError")


@pytest.mark.anyio
async def test_a_script_path_that_is_wrong_reads_as_pythons_own_words(tmp_path: Path) -> None:
    async with spawned(python(str(tmp_path / "server.py"))) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.call("read", {})
    assert "(exit code 2)" in caught.value.message
    assert f"can't open file {str(tmp_path / 'server.py')!r}" in caught.value.message


@pytest.mark.anyio
async def test_only_the_last_lines_of_stderr_are_told() -> None:
    noisy = "import sys\nfor n in range(50): print(f'line {n}', file=sys.stderr)\nsys.exit(4)\n"
    async with spawned(python("-c", noisy)) as ref:
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
    told = [line for line in caught.value.message.splitlines() if line.startswith("  | ")]
    assert told == [f"  | line {n}" for n in range(50 - STDERR_TAIL, 50)]
    assert "(exit code 4)" in caught.value.message


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_server_that_dies_during_a_call_tells_the_call_why() -> None:
    async with spawned(python(str(SCRIPTED)), intensity=1) as ref:
        assert await ref.call("echo", {"a": 1}) == {"echo": {"a": 1}}
        with pytest.raises(at.UnavailableError) as caught:
            await ref.call("crash", {})
    assert caught.value.message.startswith(
        "tools/call: the server process closed its output (exit code 3); "
        "the last lines of its stderr:\n"
    )
    assert caught.value.message.endswith("  | crashing")


@pytest.mark.anyio
async def test_a_source_given_up_says_its_last_crash() -> None:
    async with spawned(python("-c", CRASH_ON_IMPORT), intensity=1) as ref:
        for _ in range(2):
            with pytest.raises(at.UnavailableError):
                await ref.discover()
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
        assert ref.statistics().state == "failed"
    assert caught.value.message.startswith(
        "the source gave up; its last crash: ProcessEnded: "
        "the server process closed its output (exit code 1)"
    )
    assert "ModuleNotFoundError" in caught.value.message


@pytest.mark.anyio
async def test_a_server_that_closed_its_input_is_told_by_how_it_ended(warnings: Warnings) -> None:
    # The request's write fails first (a broken pipe); the error still says how the process
    # ended, which its reader learns a moment later.
    closing = (
        "import os, sys, time\n"
        "os.close(0)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "time.sleep(0.3)\n"
        "sys.exit(6)\n"
    )
    async with spawned(python("-c", closing)) as ref:
        with anyio.fail_after(20):
            await warnings.said.wait()
        with pytest.raises(at.UnavailableError) as caught:
            await ref.discover()
    # Said by the request the process left unanswered, or by the crash that cut it short.
    assert caught.value.message.endswith(
        "the server process closed its output (exit code 6); "
        "the last lines of its stderr:\n  | ready"
    )
