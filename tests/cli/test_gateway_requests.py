"""Requests a browser page or a hostile client may send a real gateway process: CSRF-shaped
posts, batches, a body past the limit. Each is refused before any tool is called."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from .gateway import GatewayProcess, eventually
from .test_gateway_connections import answer, connect
from .test_gateway_sessions import HEADERS, INITIALIZE, ping, running

pytestmark = pytest.mark.anyio

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "grower__add",
        "arguments": {"a": 20, "b": 22},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}
"""A whole ``tools/call`` in 2026-07-28: one POST, no session, calls the tool."""
MODERN = {
    **HEADERS,
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "grower__add",
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running(tmp_path_factory.mktemp("requests")) as process:
        yield process


def calls(gateway: GatewayProcess) -> int:
    return sum(event["tool"] == "grower__add" for event in gateway.events("gateway.call"))


async def post(url: str, body: Any, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        del http.headers["accept"]  # httpx's default */*: only the headers given are sent
        return await http.post(url, content=json.dumps(body), headers=headers)


def without(headers: dict[str, str], name: str) -> dict[str, str]:
    return {key: value for key, value in headers.items() if key != name}


Shape = Callable[[dict[str, str]], dict[str, str]]
# Not */*: it is a right Accept (RFC 9110). A browser's simple request cannot send JSON's type.
SHAPES: dict[str, Shape] = {
    "text/plain": lambda h: {**h, "content-type": "text/plain"},
    "a form": lambda h: {**h, "content-type": "application/x-www-form-urlencoded"},
    "multipart": lambda h: {**h, "content-type": "multipart/form-data; boundary=x"},
    "no Content-Type": lambda h: without(h, "content-type"),
    "no Accept": lambda h: without(h, "accept"),
    "Accept: text/html": lambda h: {**h, "accept": "text/html"},
    "Accept without JSON": lambda h: {**h, "accept": "text/event-stream"},
    "a foreign Origin": lambda h: {**h, "origin": "http://evil.example"},
}


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_csrf_shaped_post_is_refused_and_calls_nothing(
    gateway: GatewayProcess, shape: str
) -> None:
    url = gateway.wait_ready()
    before = calls(gateway)
    refused = await post(url, CALL, SHAPES[shape](MODERN))
    assert 400 <= refused.status_code < 500
    assert "42" not in refused.text
    opened = await post(url, INITIALIZE, SHAPES[shape](HEADERS))
    assert 400 <= opened.status_code < 500
    # No session was opened (a refusal of the SDK's may name the one it dropped).
    dropped = opened.headers.get("mcp-session-id")
    if dropped is not None:
        async with httpx.AsyncClient() as http:
            assert await ping(http, url, dropped) == 404
    # The same call, well formed, is served: the refusal was the shape's.
    served = await post(url, CALL, MODERN)
    assert served.status_code == 200
    assert json.loads(served.text)["result"]["structuredContent"] == {"result": 42}
    await eventually(lambda: calls(gateway) == before + 1)


async def test_a_batch_is_refused_in_both_eras_and_calls_nothing(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()
    before = calls(gateway)
    assert (await post(url, [CALL, CALL], MODERN)).status_code == 400
    assert (await post(url, [INITIALIZE], HEADERS)).status_code == 400
    async with httpx.AsyncClient() as http:
        opened = await http.post(url, json=INITIALIZE, headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        legacy_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALL["params"]}
        batch = await http.post(url, content=json.dumps([legacy_call] * 100), headers=session)
        assert batch.status_code == 400
    served = await post(url, CALL, MODERN)
    assert served.status_code == 200
    await eventually(lambda: calls(gateway) == before + 1)


async def test_a_6_mib_body_is_answered_413_before_it_is_all_sent(
    gateway: GatewayProcess,
) -> None:
    port = httpx.URL(gateway.wait_ready()).port
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        "accept: application/json, text/event-stream\r\n"
    )
    # Said by its length: answered before a byte of the body is sent.
    stream = await connect(gateway)
    await stream.send(f"{head}content-length: {6 * 2**20}\r\n\r\n".encode())
    assert (await answer(stream)).startswith(b"HTTP/1.1 413")
    await stream.aclose()
    # Sent in chunks with no length: answered once past the limit, 2 MiB before the end.
    stream = await connect(gateway)
    await stream.send(f"{head}transfer-encoding: chunked\r\n\r\n".encode())
    chunk = b"%x\r\n%s\r\n" % (2**16, b" " * 2**16)
    try:
        for _ in range(4 * 16 + 1):
            await stream.send(chunk)
    except anyio.BrokenResourceError:
        pass  # closed while sending: the answer is read below all the same
    assert (await answer(stream)).startswith(b"HTTP/1.1 413")
    await stream.aclose()
