"""The MCP source passes every check over the official SDK's server: stateless, and speaking only
sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest

import amends_toolkit as at
from amends_toolkit.conformance import STATES, BlockingCalls, BlockingLog, State
from amends_toolkit.conformance.pytest_plugin import conformance_tests

from ._servers import TOKEN, WRONG_TOKEN, closed_port, mcp_app, serve


class McpFixture:
    """``at.mcp.http`` over the server on loopback: a wrong token, ``/down`` or a closed port."""

    states: Sequence[State] = STATES

    def __init__(self, *, port: int, log: BlockingLog) -> None:
        self.port = port
        self.log = log
        self.closed = closed_port()

    @property
    def secrets(self) -> Sequence[str]:
        return (TOKEN, WRONG_TOKEN, f"127.0.0.1:{self.port}", f"127.0.0.1:{self.closed}")

    def blocking_calls(self) -> BlockingCalls:
        return self.log.counts()

    @asynccontextmanager
    async def source(self, state: State) -> AsyncIterator[at.ToolSource]:
        token = WRONG_TOKEN if state == "unauthorized" else TOKEN
        url = {
            "working": f"http://127.0.0.1:{self.port}/mcp",
            "unauthorized": f"http://127.0.0.1:{self.port}/mcp",
            "unavailable": f"http://127.0.0.1:{self.port}/down/mcp",
            "unreachable": f"http://127.0.0.1:{self.closed}/mcp",
        }[state]
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client:
            yield at.mcp.http(name="system", url=url, client=client)


@pytest.fixture(scope="module")
def stateless_server() -> Iterator[tuple[int, BlockingLog]]:
    log = BlockingLog()
    with serve(mcp_app(log)) as port:
        yield port, log


@pytest.fixture(scope="module")
def sessions_server() -> Iterator[tuple[int, BlockingLog]]:
    log = BlockingLog()
    with serve(mcp_app(log, sessions_only=True)) as port:
        yield port, log


@pytest.fixture
def stateless(stateless_server: tuple[int, BlockingLog]) -> McpFixture:
    port, log = stateless_server
    return McpFixture(port=port, log=log)


@pytest.fixture
def sessions(sessions_server: tuple[int, BlockingLog]) -> McpFixture:
    port, log = sessions_server
    return McpFixture(port=port, log=log)


test_mcp_source_over_a_stateless_server = conformance_tests("stateless")
test_mcp_source_over_a_server_of_sessions = conformance_tests("sessions")
