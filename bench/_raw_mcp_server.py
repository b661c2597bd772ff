"""A minimal MCP server as a raw ASGI app, so that a client benchmark measures the client: it
answers ``tools/call echo`` from a few dicts and no framework. Run as
``python _raw_mcp_server.py PORT stateless|session``.

- ``stateless``: the 2026-07-28 protocol (``server/discover`` names it; every request stands
  alone; ``initialize`` is answered too, for clients that only begin sessions).
- ``session``: 2025-11-25 sessions: ``initialize`` gives an ``Mcp-Session-Id``; ``DELETE`` ends it;
  ``server/discover`` is a method it does not know, as for any server of that era.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import uvicorn

ECHO = {
    "name": "echo",
    "description": "Answer the text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "1"},
    "ttlMs": 0,
    "cacheScope": "private",
}

Scope = dict[str, Any]


def make_app(mode: str) -> Any:
    sessions: set[str] = set()

    def answer(
        message: dict[str, Any],
    ) -> tuple[int, dict[str, Any] | None, list[tuple[bytes, bytes]]]:
        method, id_ = message.get("method"), message.get("id")
        headers: list[tuple[bytes, bytes]] = []
        if id_ is None:
            return 202, None, headers
        params = message.get("params") or {}
        if method == "tools/call":
            text = params.get("arguments", {}).get("text", "")
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "tools/list":
            result = {"tools": [ECHO]}
            if mode == "stateless":
                result |= {"ttlMs": 0, "cacheScope": "private"}
        elif method == "server/discover" and mode == "stateless":
            result = DISCOVERED
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
            if mode == "session":
                session = uuid.uuid4().hex
                sessions.add(session)
                headers.append((b"mcp-session-id", session.encode()))
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": "Method not found"}
            return 200, {"jsonrpc": "2.0", "id": id_, "error": error}, headers
        if mode == "stateless" and method in ("tools/call", "tools/list"):
            result = {**result, "resultType": "complete"}
        return 200, {"jsonrpc": "2.0", "id": id_, "result": result}, headers

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request_headers = dict(scope["headers"])
        if scope["method"] == "DELETE":
            sessions.discard(request_headers.get(b"mcp-session-id", b"").decode())
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body)
        session = request_headers.get(b"mcp-session-id")
        if (
            mode == "session"
            and message.get("method") != "initialize"
            and (session is None or session.decode() not in sessions)
        ):
            status, reply, headers = 404, None, list[tuple[bytes, bytes]]()
        else:
            status, reply, headers = answer(message)
        payload = b"" if reply is None else json.dumps(reply).encode()
        headers = [*headers, (b"content-type", b"application/json")] if payload else headers
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


if __name__ == "__main__":
    uvicorn.run(
        make_app(sys.argv[2]),
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=120,
        # uvicorn's own defaults, named: were httptools and uvloop installed, `auto` would
        # pick them and the server's cost would change with the machine's packages. The
        # server is not what sets the pace (the report's busy column: 12-35% of a core).
        http="h11",
        loop="asyncio",
    )
