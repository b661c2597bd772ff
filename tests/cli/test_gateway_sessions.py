"""Sessions of a real gateway process against hostile clients: a flood of ``initialize``, idle
sessions, another client's session id, forged ids.

Two clients on loopback are told apart by their peer addresses: one binds its sockets to
127.0.0.1, the other to 127.0.0.2.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from .gateway import GatewayProcess, eventually, grower_config
from .test_gateway import text

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextmanager
def running(directory: Path, **serve: Any) -> Iterator[GatewayProcess]:
    process = GatewayProcess(grower_config(directory, **serve))
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def from_address(address: str) -> httpx.AsyncClient:
    """A client whose sockets are bound to ``address`` (its peer address, as the gateway sees)."""
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address))


async def initialize(http: httpx.AsyncClient, url: str) -> str:
    answer = await http.post(url, json=INITIALIZE, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


async def ping(http: httpx.AsyncClient, url: str, session: str) -> int:
    answer = await http.post(url, json=PING, headers={**HEADERS, "mcp-session-id": session})
    return answer.status_code


@asynccontextmanager
async def standalone_stream(http: httpx.AsyncClient, url: str, session: str) -> AsyncIterator[None]:
    """A session's GET stream, open (its answer's head received) until the block ends."""
    headers = {"accept": "text/event-stream", "mcp-session-id": session}
    async with http.stream("GET", url, headers=headers) as answer:
        assert answer.status_code == 200
        yield


async def sdk_client_calls(url: str) -> None:
    async with Client(url, mode="legacy", cache=None) as client:
        assert "grower__add" in {tool.name for tool in (await client.list_tools()).tools}
        assert text(await client.call_tool("grower__add", {"a": 2, "b": 3})) == '{"result": 5}'


async def test_a_flood_of_initialize_does_not_lock_out_a_new_client(tmp_path: Path) -> None:
    with running(tmp_path, max_sessions=4) as gateway:
        url = gateway.wait_ready()
        async with from_address("127.0.0.1") as client, from_address("127.0.0.2") as flooder:
            earlier = await initialize(client, url)
            flood = [await initialize(flooder, url) for _ in range(40)]
            # The flooder's sessions idle longest made room, not the other client's, idle longer.
            assert await ping(flooder, url, flood[0]) == 404
            assert await ping(flooder, url, flood[-1]) == 200
            assert await ping(client, url, earlier) == 200
        await sdk_client_calls(url)
        evicted = gateway.events("mcp_server.session_evicted")
        assert len(evicted) >= 37
        assert max(event["sessions"] for event in evicted) < 4


async def test_at_the_cap_with_every_session_busy_a_new_one_is_refused_with_503(
    tmp_path: Path,
) -> None:
    with running(tmp_path, max_sessions=2) as gateway:
        url = gateway.wait_ready()
        async with httpx.AsyncClient() as http:
            first, second = await initialize(http, url), await initialize(http, url)
            async with standalone_stream(http, url, first):
                async with standalone_stream(http, url, second):
                    refused = await http.post(url, json=INITIALIZE, headers=HEADERS)
                    assert refused.status_code == 503
                    assert "Too many open sessions" in refused.text
                # The second's stream has ended: once the gateway sees it, that session is idle
                # and makes room for a new one; the first, still streaming, is kept.

                async def admitted() -> bool:
                    answer = await http.post(url, json=INITIALIZE, headers=HEADERS)
                    return answer.status_code == 200

                await eventually(admitted)
                assert await ping(http, url, second) == 404
                assert await ping(http, url, first) == 200


async def test_an_idle_session_expires_and_a_streaming_one_does_not(tmp_path: Path) -> None:
    with running(tmp_path, session_idle_timeout=4) as gateway:
        url = gateway.wait_ready()
        async with Client(url, mode="legacy", cache=None) as client, httpx.AsyncClient() as http:
            await client.list_tools()
            idle = await initialize(http, url)
            assert await ping(http, url, idle) == 200
            await eventually(lambda: len(gateway.events("mcp_server.session_expired")) >= 1)
            assert await ping(http, url, idle) == 404
            # The SDK client's standalone stream kept its session open all along.
            assert text(await client.call_tool("grower__add", {"a": 1, "b": 1})) == '{"result": 2}'


async def test_another_clients_requests_with_a_session_id_are_answered_404(
    tmp_path: Path,
) -> None:
    with running(tmp_path) as gateway:
        url = gateway.wait_ready()
        async with from_address("127.0.0.1") as owner, from_address("127.0.0.2") as other:
            session = await initialize(owner, url)
            header = {"mcp-session-id": session}
            assert await ping(other, url, session) == 404
            streamed = await other.get(url, headers={"accept": "text/event-stream", **header})
            assert streamed.status_code == 404
            assert (await other.delete(url, headers=header)).status_code == 404
            assert await ping(owner, url, session) == 200
            assert (await owner.delete(url, headers=header)).status_code == 200
            assert await ping(owner, url, session) == 404


async def test_random_and_forged_session_ids_are_answered_404(tmp_path: Path) -> None:
    with running(tmp_path) as gateway:
        url = gateway.wait_ready()
        async with httpx.AsyncClient() as http:
            real = await initialize(http, url)
            forged = [
                uuid.uuid4().hex,
                real[:-1] + ("0" if real[-1] != "0" else "1"),
                "0." + real,  # a replica's salt before a real id, sent to a gateway with none
                real.upper(),
                "x" * 4_000,
            ]
            for session in forged:
                assert await ping(http, url, session) == 404, session
                answer = await http.delete(url, headers={"mcp-session-id": session})
                assert answer.status_code == 404
            assert await ping(http, url, real) == 200
