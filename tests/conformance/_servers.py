"""Real servers on 127.0.0.1 for the subjects: uvicorn in a thread, and the apps it serves.

The HTTP app serves the three-tool system as an API (and its OpenAPI document); the MCP apps
serve it with the official SDK, stateless or with sessions only. Every app refuses a request
without ``Authorization: Bearer <TOKEN>`` (401), and answers 503 to every path under ``/down``.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeAlias

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from amends_toolkit.conformance import BlockingLog

TOKEN = "conformance-secret-token"
WRONG_TOKEN = "conformance-refused-token"

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
App: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]


@contextmanager
def serve(app: App) -> Iterator[int]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread of its own; give the port."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        lifespan="auto",
        log_level="warning",
        http="h11",
        ws="none",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            thread.join(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def _answer(send: Send, status: int, body: object) -> None:
    content = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": content})


def guarded(app: App) -> App:
    """``app`` behind the credentials check, with ``/down`` answering 503."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/down" or path.startswith("/down/"):
            await _answer(send, 503, {"error": "down for maintenance"})
            return
        headers = dict(scope["headers"])
        if path != "/openapi.json" and headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
            await _answer(send, 401, {"error": "unauthorized"})
            return
        await app(scope, receive, send)

    return guard


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Conformance system", "version": "1"},
    "servers": [{"url": "https://example.invalid/api"}],
    "paths": {
        "/echo": {
            "get": {
                "operationId": "echo",
                "summary": "Answers with the text it is given.",
                "parameters": [
                    {"name": "text", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "The text."}},
            }
        },
        "/failing": {
            "post": {
                "operationId": "failing",
                "summary": "Reports that it failed.",
                "responses": {"422": {"description": "It failed."}},
            }
        },
        "/blocking": {
            "post": {
                "operationId": "blocking",
                "summary": "Never answers.",
                "responses": {"200": {"description": "Never."}},
            }
        },
    },
}


def http_app(log: BlockingLog) -> App:
    """The three-tool system as an HTTP API: ``GET /echo?text=``, ``POST /failing`` (422),
    ``POST /blocking`` (never answers; records until the client goes away), and
    ``GET /openapi.json``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        method, path = scope["method"], scope["path"]
        await _body(receive)
        if (method, path) == ("GET", "/openapi.json"):
            await _answer(send, 200, OPENAPI)
        elif (method, path) == ("GET", "/echo"):
            from urllib.parse import parse_qs

            query = parse_qs(scope["query_string"].decode())
            await _answer(send, 200, {"text": query.get("text", [""])[0]})
        elif (method, path) == ("POST", "/failing"):
            await _answer(send, 422, {"message": "The tool failed, as it always does."})
        elif (method, path) == ("POST", "/blocking"):
            with log.call():
                # The call stops when the client goes away: uvicorn tells the app so.
                while (await receive())["type"] != "http.disconnect":
                    pass
        else:
            await _answer(send, 404, {"error": f"no route {method} {path}"})

    return guarded(app)


def mcp_server(log: BlockingLog) -> MCPServer:
    """The three-tool system as an MCP server of the official SDK."""
    server = MCPServer("conformance")

    @server.tool()
    def echo(text: str) -> str:
        """Answers with the text it is given."""
        return text

    @server.tool()
    def failing() -> str:
        """Reports that it failed."""
        raise ToolError("The tool failed, as it always does.")

    @server.tool()
    async def blocking() -> str:
        """Never answers."""
        with log.call():
            await anyio.sleep_forever()
        return "never"

    return server


def mcp_app(log: BlockingLog, *, sessions_only: bool = False) -> App:
    """The MCP server's app at ``/mcp`` (and ``/down/mcp``): stateless, or speaking only sessions."""
    # Answers as event streams: only on that path does the SDK see a client go away and cancel
    # the tool (with json_response it runs on after the client has left).
    app: App = mcp_server(log).streamable_http_app(stateless_http=not sessions_only)
    if sessions_only:
        app = _sessions_only(app)
    return guarded(app)


def _sessions_only(app: App) -> App:
    """Answers a request of the stateless protocol as a server of sessions only does
    (reference/mcp-protocol.md §7.1): the SDK has no switch to turn that protocol off."""

    async def only_sessions(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            version = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode()
            if version and version not in HANDSHAKE_VERSIONS:
                await _body(receive)
                await _answer(
                    send,
                    400,
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": -32000,
                            "message": f"Bad Request: Unsupported protocol version: {version}",
                        },
                    },
                )
                return
        await app(scope, receive, send)

    return only_sessions


HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
