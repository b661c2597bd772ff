"""A passivated MCP source against the official SDK's server, in its session mode: the idle
actor ends its session (the server sees a DELETE) and its next call begins another, over a
tenant's client of ``at.http.Connections``."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp.server import MCPServer

import amends_toolkit as at

from .test_mcp_http import BASE, Recorder, sessions_only

pytestmark = pytest.mark.anyio

IDLE = 60.0


def server() -> MCPServer:
    """The SDK's server with one tool, async: a sync one runs in a thread, which the virtual
    clock does not wait for."""
    server = MCPServer("demo")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def sessions(recorder: Recorder) -> list[tuple[str, str, int, str]]:
    """Each request's verb, JSON-RPC method, status and session id, in order."""
    return [
        (verb, method, status, headers.get("mcp-session-id", ""))
        for verb, method, status, headers in recorder.seen
        if method != "server/discover"
    ]


@pytest.mark.virtual_clock
async def test_a_passivated_mcp_source_ends_its_session_and_its_next_call_begins_another() -> None:
    starlette = server().streamable_http_app(stateless_http=False, json_response=True)
    recorder = Recorder(sessions_only(starlette))
    async with (
        starlette.router.lifespan_context(starlette),
        at.http.Connections(httpx.ASGITransport(app=recorder)) as connections,
        at.Runtime() as runtime,
    ):
        client = connections.client(headers={"Authorization": "Bearer tenant-token-0a1b2c"})
        ref = await runtime.spawn(
            at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client), idle_timeout=IDLE
        )
        assert await ref.call("echo", {"text": "one"}) == {"result": "one"}
        await anyio.sleep(IDLE - 1)
        assert "DELETE" not in recorder.calls()
        await anyio.sleep(2)
        assert ref.statistics().state == "passivated"
        before = sessions(recorder)
        assert before[-1][:3] == ("DELETE", "", 200)
        first = before[-1][3]
        assert first
        assert {id for verb, _, _, id in before if verb == "POST" and id} == {first}
        answers: list[at.JsonValue] = []

        async def call(text: str) -> None:
            answers.append(await ref.call("echo", {"text": text}))

        # A hundred first calls at once: one incarnation, one session for them all.
        async with anyio.create_task_group() as tasks:
            for index in range(100):
                tasks.start_soon(call, str(index))
        assert sorted(answers, key=str) == sorted(
            ({"result": str(index)} for index in range(100)), key=str
        )
        after = sessions(recorder)[len(before) :]
        assert after[0][:2] == ("POST", "initialize")
        assert [method for _, method, _, _ in after].count("initialize") == 1
        second = {id for verb, _, _, id in after if verb == "POST" and id}
        assert len(second) == 1
        assert first not in second
        stats = ref.statistics()
        assert (stats.state, stats.restarts, stats.passivations) == ("running", 0, 1)
