"""Hostile peers on loopback: a raw HTTP server that answers as a script says, byte for byte.

The server speaks just enough HTTP/1.1 to read a request (its head and a ``Content-Length``
body) and writes whatever its script yields, then closes the connection. An MCP endpoint of the
stateless protocol is a script: it answers ``server/discover`` and ``tools/list`` as a real
server does, and ``tools/call`` as the test asks.
"""

from __future__ import annotations

import json
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from urllib.parse import unquote

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from amends_toolkit._json import JsonObject

Reply = Callable[[str, dict[str, str], bytes], AsyncIterator[bytes]]
"""A script: given a request's target, headers (lower-case) and body, the bytes to write."""

CallReply = Callable[[JsonObject], AsyncIterator[bytes]]
"""What a ``tools/call`` is answered with, given the JSON-RPC request."""

TOOL: JsonObject = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def head(status: int = 200, **headers: str) -> bytes:
    """A response's status line and headers (``Connection: close`` always)."""
    lines = [f"HTTP/1.1 {status} X", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def json_reply(value: object, status: int = 200) -> bytes:
    """A whole JSON response."""
    body = json.dumps(value).encode()
    return head(status, content_type="application/json", content_length=str(len(body))) + body


def echo_all(target: str, headers: dict[str, str], *, decoded: bool = True) -> str:
    """Everything a request carried: its target (``decoded``, or as it came) and every header."""
    shown = unquote(target) if decoded else target
    return shown + " " + " ".join(f"{k}={v}" for k, v in sorted(headers.items()))


def mcp_echo_reply(answer: Callable[[str, dict[str, str]], str]) -> Reply:
    """An MCP endpoint (stateless, 2026 era) whose one tool, ``echo``, answers with what
    ``answer`` makes of its call's target and headers."""

    async def reply(target: str, headers: dict[str, str], body: bytes) -> AsyncIterator[bytes]:
        request = json.loads(body)
        method, id_ = request.get("method"), request.get("id")
        if method == "server/discover":
            result: dict[str, object] = {"supportedVersions": ["2026-07-28"]}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        else:
            result = {"content": [{"type": "text", "text": answer(target, headers)}]}
        yield json_reply({"jsonrpc": "2.0", "id": id_, "result": result})

    return reply


def result(request: JsonObject, value: JsonObject) -> bytes:
    """The JSON-RPC result of a request, as a whole JSON response."""
    return json_reply({"jsonrpc": "2.0", "id": request["id"], "result": value})


async def once(data: bytes) -> AsyncIterator[bytes]:
    """A script that writes one thing."""
    yield data


@asynccontextmanager
async def http_peer(reply: Reply) -> AsyncIterator[tuple[str, list[bytes]]]:
    """Serve ``reply`` on 127.0.0.1; yields the base URL and the request bodies received."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    bodies: list[bytes] = []

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buffered = BufferedByteReceiveStream(stream)
            try:
                lines = (await buffered.receive_until(b"\r\n\r\n", 65536)).decode().split("\r\n")
                target = lines[0].split(" ")[1]
                headers = {
                    key.strip().lower(): value.strip()
                    for key, _, value in (line.partition(":") for line in lines[1:])
                }
                body = await buffered.receive_exactly(int(headers.get("content-length", "0")))
                bodies.append(body)
                async for data in reply(target, headers, body):
                    await stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                pass  # the client stopped reading, as it should

    async with listener, anyio.create_task_group() as tasks:
        tasks.start_soon(listener.serve, serve)
        try:
            yield f"http://127.0.0.1:{port}", bodies
        finally:
            tasks.cancel_scope.cancel()


@asynccontextmanager
async def mcp_peer(call: CallReply) -> AsyncIterator[str]:
    """A stateless (2026-07-28) MCP endpoint whose ``tools/call`` answers are ``call``'s."""

    async def reply(_target: str, _headers: dict[str, str], body: bytes) -> AsyncIterator[bytes]:
        request: JsonObject = json.loads(body)
        method = request.get("method")
        if method == "server/discover":
            yield result(request, {"supportedVersions": ["2026-07-28"], "capabilities": {}})
        elif method == "tools/list":
            yield result(request, {"tools": [TOOL]})
        elif method == "tools/call":
            async for data in call(request):
                yield data
        else:
            yield head(202, content_length="0")

    async with http_peer(reply) as (url, _):
        yield url + "/mcp"


def chunked(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


@cache
def gzip_bomb(inflated: int) -> bytes:
    """Gzip of ``inflated`` bytes of JSON whitespace (about a thousandth of that on the wire)."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b" " * (1024 * 1024)
    parts = [squeeze.compress(block) for _ in range(inflated // len(block))]
    return b"".join([*parts, squeeze.flush()])


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The peak of Python's allocations within the block, in bytes (``[peak]`` once it ends)."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def cpu_seconds(work: Callable[[], object], repeats: int = 5) -> float:
    """The least CPU time ``work`` took in ``repeats`` runs: what other processes on a busy
    machine cost it is left out, so two sizes compare as a ratio."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best
