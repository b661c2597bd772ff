"""The MCP stdio source passes every check over the official SDK's server run as a process.

The process a source runs hands its pipes to a server the module's zygote forks, already past
the SDK's slow imports (see stdio_server.py).

A stdio server has no credentials to refuse, so the fixture has no ``"unauthorized"`` system:
``"unavailable"`` is a server that exits at once, saying it is down, and ``"unreachable"`` a
command that does not exist.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest

import amends_toolkit as at
from amends_toolkit.conformance import BlockingCalls, BlockingLog, State
from amends_toolkit.conformance.pytest_plugin import conformance_tests

SCRIPT = Path(__file__).resolve().parent / "stdio_server.py"
MISSING_COMMAND = "/nonexistent/conformance-mcp-server"
TOKEN = "conformance-stdio-secret-token"


class StdioFixture:
    """``at.mcp.stdio`` over a server process forked by the module's zygote (stdio_server.py)."""

    states: Sequence[State] = ("working", "unavailable", "unreachable")

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.log = BlockingLog(zygote.log_path)

    @property
    def secrets(self) -> Sequence[str]:
        return (str(SCRIPT), MISSING_COMMAND, TOKEN, str(self.zygote.socket_path))

    def blocking_calls(self) -> BlockingCalls:
        return self.log.counts()

    @asynccontextmanager
    async def source(self, state: State) -> AsyncIterator[at.ToolSource]:
        command, args = {
            "working": (sys.executable, [str(SCRIPT), "launch", str(self.zygote.socket_path)]),
            "unavailable": (sys.executable, [str(SCRIPT), "down"]),
            "unreachable": (MISSING_COMMAND, []),
        }[state]
        # The token stands for a credential a host gives a server in its environment.
        yield at.mcp.stdio(
            name="system", command=command, args=args, env={"CONFORMANCE_TOKEN": TOKEN}
        )


@attrs.frozen
class Zygote:
    socket_path: Path
    log_path: Path


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    # A short directory: a Unix socket's path holds at most 107 bytes.
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        paths = Zygote(
            socket_path=Path(directory) / "zygote.sock", log_path=Path(directory) / "blocking.log"
        )
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "zygote", str(paths.socket_path), str(paths.log_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == b"ready\n"
            yield paths
        finally:
            process.terminate()
            process.wait(10)
            process.stdout.close()  # type: ignore[union-attr]


@pytest.fixture
def server_process(zygote: Zygote) -> StdioFixture:
    return StdioFixture(zygote)


test_mcp_stdio_source_over_a_server_process = conformance_tests("server_process")
