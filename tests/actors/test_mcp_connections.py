"""The MCP HTTP source over a raw loopback server that ends kept-alive connections mid-request.

What a server does to a connection is scripted per request (answer it, reset the connection with
the request unread, or read the request and close), so each race is met in order: the server
waits for the request's bytes to arrive in its socket (``select``), never for time.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import httpx
import httpx2
import pytest

import amends_toolkit as at
from amends_toolkit._json import JsonObject

pytestmark = pytest.mark.anyio

Action = Literal["answer", "reset unread", "read and close"]

DISCOVERED: JsonObject = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "private",
}


class RawServer:
    """HTTP/1.1 on 127.0.0.1, one thread: connection ``n`` (in the order accepted) does
    ``plans[n]``'s actions to its requests in turn, keeping the connection alive between them.

    ``seen`` holds, for each connection, the JSON-RPC methods of the requests it read whole.
    """

    def __init__(self, plans: list[list[Action]]) -> None:
        self.plans = plans
        self.seen: list[list[str]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stop_reading, self._stop = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _serve(self) -> None:
        with self._listener:
            for plan in self.plans:
                if not self._ready(self._listener):
                    return
                connection, _ = self._listener.accept()
                seen: list[str] = []
                self.seen.append(seen)
                with connection:
                    for action in plan:
                        if not self._ready(connection):
                            return
                        if action == "reset unread":
                            # Closed with the request's bytes unread: the kernel resets the
                            # connection (RFC 2525 §2.17), as a server's idle timeout that fires
                            # as a request arrives does.
                            break
                        body = _read_request(connection)
                        if body is None:
                            break
                        seen.append(str(body.get("method", "response")))
                        if action == "read and close":
                            break
                        _answer(connection, body)

    def _ready(self, sock: socket.socket) -> bool:
        """Wait until ``sock`` has something to read; ``False`` once the test is done."""
        readable, _, _ = select.select([sock, self._stop_reading], [], [])
        return self._stop_reading not in readable

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.send(b"x")
        self._thread.join(10)
        self._stop.close()
        self._stop_reading.close()


def _read_request(connection: socket.socket) -> JsonObject | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        body += chunk
    parsed = json.loads(body) if body else {}
    assert isinstance(parsed, dict)
    return parsed


def _answer(connection: socket.socket, body: JsonObject) -> None:
    if body.get("method") == "server/discover":
        value: JsonObject = DISCOVERED
    else:
        value = {"resultType": "complete", "content": [], "structuredContent": {"said": "hi"}}
    payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": value}).encode()
    connection.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )


@contextmanager
def raw_server(*plans: list[Action]) -> Iterator[RawServer]:
    with RawServer(list(plans)) as server:
        yield server


@pytest.mark.parametrize("client_class", [httpx.AsyncClient, httpx2.AsyncClient])
async def test_a_call_on_a_kept_alive_connection_reset_unread_is_sent_again(
    client_class: type[httpx.AsyncClient] | type[httpx2.AsyncClient],
) -> None:
    with raw_server(["answer", "reset unread"], ["answer"]) as server:
        async with client_class() as client:
            source = at.mcp.http(name="s", url=server.url, client=client)
            async with source.lifespan():
                assert await source.call("echo", {}) == {"said": "hi"}
    # The reset connection read nothing of the call; the call was read once, on a new one.
    assert server.seen == [["server/discover"], ["tools/call"]]


async def test_a_call_the_server_read_on_a_kept_alive_connection_is_not_sent_again() -> None:
    with raw_server(["answer", "read and close"], ["answer"]) as server:
        async with httpx.AsyncClient() as client:
            source = at.mcp.http(name="s", url=server.url, client=client)
            async with source.lifespan():
                with pytest.raises(at.UnavailableError, match="RemoteProtocolError"):
                    await source.call("echo", {})
    assert server.seen == [["server/discover", "tools/call"]]


async def test_a_call_reset_on_a_new_connection_is_not_sent_again() -> None:
    with raw_server(["answer"], ["reset unread"], ["answer"]) as server:
        # No connection kept alive: the call goes out on a new connection.
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits) as client:
            source = at.mcp.http(name="s", url=server.url, client=client)
            async with source.lifespan():
                with pytest.raises(at.UnavailableError, match="ReadError"):
                    await source.call("echo", {})
    assert server.seen == [["server/discover"], []]
