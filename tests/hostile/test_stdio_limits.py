"""An MCP server over stdio that writes too much, too deep, or stops reading costs only the call
it answers: a line is bounded before it is held, a deep answer is no defect (the process goes
on), and a call never outlives its timeout waiting to write."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from trio.testing import MockClock

import amends_toolkit as at
from amends_toolkit.actors._mcp_stdio import McpStdioSource
from amends_toolkit.protocols.mcp._jsonrpc import MAX_MESSAGE_BYTES, encode, request
from amends_toolkit.protocols.mcp._results import call_params

from .peers import peak_memory

PEER = str(Path(__file__).parent / "stdio_peer.py")
MiB = 1024 * 1024


def peer(
    *args: str, timeout: float = 30.0, max_answer_bytes: int = MAX_MESSAGE_BYTES
) -> McpStdioSource:
    return at.mcp.stdio(
        name="peer",
        command=sys.executable,
        args=(PEER, *args),
        timeout=timeout,
        max_answer_bytes=max_answer_bytes,
    )


@asynccontextmanager
async def running(source: at.ToolSource) -> AsyncIterator[at.ActorRef]:
    async with at.Runtime() as runtime:
        yield await runtime.spawn(source)


@pytest.mark.anyio
async def test_a_line_past_the_limit_fails_its_call_unheld_and_the_process_goes_on() -> None:
    async with running(peer()) as ref:
        with peak_memory() as peak, pytest.raises(at.CallFailedError, match="Ask for less"):
            await ref.call("answer", {"size": 64 * MiB})
        assert peak[0] < 2 * MAX_MESSAGE_BYTES
        assert await ref.call("answer", {}) == [{"type": "text", "text": "ok"}]
        assert ref.statistics().restarts == 0


@pytest.mark.anyio
async def test_the_line_limit_is_an_option() -> None:
    async with running(peer(max_answer_bytes=300_000)) as ref:
        answer = await ref.call("answer", {"size": 65536 * 4})
        assert answer == [{"type": "text", "text": "x" * 65536 * 4}]
        with pytest.raises(at.CallFailedError, match="longer than 300000 bytes"):
            await ref.call("answer", {"size": 65536 * 5})


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [200, 100_000])
async def test_a_deeply_nested_answer_is_an_invalid_response_and_no_restart(depth: int) -> None:
    async with running(peer()) as ref:
        with pytest.raises(at.InvalidResponseError):
            await ref.call("answer", {"depth": depth})
        assert await ref.call("answer", {"depth": 3}) == {"a": [[[]]]}
        assert ref.statistics().restarts == 0


@pytest.fixture
def anyio_backend() -> object:
    # A virtual clock that jumps only once the process has been idle a real second, so that the
    # server's real startup and answers come before any timeout does.
    return ("trio", {"clock": MockClock(autojump_threshold=1.0)})


@pytest.mark.anyio
async def test_a_server_that_stops_reading_does_not_keep_a_call_past_its_timeout() -> None:
    timeout = 60.0
    # The call's request fills the server's one-page pipe but for less than the cancellation
    # notice the source sends when the call times out: that notice finds the pipe full.
    pad = 4000 - len(encode(request(2, "tools/call", call_params("answer", {"pad": ""})))) - 1
    async with running(peer("deaf", timeout=timeout)) as ref:
        started = anyio.current_time()
        with pytest.raises(at.UnavailableError):
            await ref.call("answer", {"pad": "x" * pad})
        assert anyio.current_time() - started < timeout + 5
