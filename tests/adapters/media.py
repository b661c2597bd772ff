"""A toolkit over the MCP server of the conformance suite's content and progress scenarios.

The server is ``media_server()`` of ``conformance/mcp/front.py`` (the official SDK's
``MCPServer``), reached by ``at.mcp.http`` through a spawned actor, so what a test reads went
through the SDK's server, our source's parsing, the runtime and the toolkit.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Literal

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import amends_toolkit as at


def _front_program() -> ModuleType:
    path = Path(__file__).parents[2] / "conformance" / "mcp" / "front.py"
    spec = importlib.util.spec_from_file_location("conformance_mcp_front", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FRONT = _front_program()
PNG: str = FRONT.PNG
WAV: str = FRONT.WAV


class Bodies:
    """An ASGI middleware that keeps the JSON-RPC messages the server was sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.messages: list[dict[str, object]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def reading() -> Message:
            message = await receive()
            body = message.get("body", b"")
            if message["type"] == "http.request" and body:
                self.messages.append(json.loads(body))
            return message

        await self.app(scope, reading, send)

    def calls(self) -> list[dict[str, object]]:
        """The params of every ``tools/call`` sent."""
        return [m["params"] for m in self.messages if m.get("method") == "tools/call"]  # type: ignore[misc]


def sessions_only(app: ASGIApp) -> ASGIApp:
    """Answer the 2026-07-28 probe as a server of sessions only does (HTTP 400)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        if scope["type"] == "http" and headers.get(b"mcp-protocol-version") == b"2026-07-28":
            while (await receive()).get("more_body"):
                pass
            error = {"code": -32000, "message": "Unsupported protocol version: 2026-07-28"}
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            start = {"type": "http.response.start", "status": 400}
            await send({**start, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


@asynccontextmanager
async def media_toolkit(
    era: Literal["stateless", "sessions"] = "stateless",
) -> AsyncIterator[tuple[at.Toolkit, Bodies]]:
    """The media tools, unprefixed, through an actor; and what their server was sent."""
    app = FRONT.media_server().streamable_http_app()
    bodies = Bodies(app if era == "stateless" else sessions_only(app))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=bodies), base_url="http://127.0.0.1:8000"
        ) as client,
        at.Runtime() as runtime,
    ):
        source = await runtime.spawn(
            at.mcp.http(name="media", url="http://127.0.0.1:8000/mcp", client=client)
        )
        yield at.source_toolkit(source, await source.discover()), bodies
