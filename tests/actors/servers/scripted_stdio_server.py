"""A scripted MCP server over stdio for what real servers rarely do: crash, print garbage,
ask the client things, never answer, ignore the end of its input.

Run as ``python scripted_stdio_server.py [mode [version]]``; modes:
``normal`` (the default), ``exit`` (exits at once with code 3), ``mute`` (reads, never answers),
``version`` (answers initialize with the version given next), ``stubborn`` (ignores the end of
its input and SIGTERM; only a kill ends it). What each tool does is in ``call`` below.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

TOOLS = [
    [{"name": "echo", "description": "Echo the arguments", "inputSchema": {"type": "object"}}],
    [
        {"name": "garbage", "inputSchema": {"type": "object"}},
        {
            "name": "crash",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": False},
        },
    ],
    [
        {"name": name, "inputSchema": {"type": "object"}}
        for name in ("ping", "hang", "bad", "invalid", "unknown", "stderr", "pid", "failed")
    ],
]
CURSORS = [None, "", "page-3"]  # an empty string is a cursor too


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def result(id: Any, value: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": id, "result": value})


def error(id: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})


class Server:
    def __init__(self, mode: str, version: str) -> None:
        self.mode = mode
        self.version = version
        self.waiting_ping: Any = None  # the id of a "ping" call waiting for our requests' answers
        self.answers: dict[Any, Any] = {}

    def handle(self, message: dict[str, Any]) -> None:
        method: str | None = message.get("method")
        id = message.get("id")
        params = message.get("params") or {}
        if method is None:
            self.answers[id] = message.get("result", message.get("error"))
            if self.waiting_ping is not None and {"srv-1", "srv-2"} <= self.answers.keys():
                pong, refused = self.answers["srv-1"], self.answers["srv-2"]
                result(
                    self.waiting_ping,
                    {"content": [], "structuredContent": {"pong": pong, "refused": refused}},
                )
                self.waiting_ping = None
            return
        if method == "notifications/cancelled":
            say(f"cancelled {params.get('requestId')}")
            return
        if method.startswith("notifications/"):
            return
        if method == "initialize":
            say(f"initialize offered {params.get('protocolVersion')}")
            result(
                id,
                {
                    "protocolVersion": self.version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"},
                },
            )
        elif method == "tools/list":
            page = CURSORS.index(params.get("cursor"))
            listing: dict[str, Any] = {"tools": TOOLS[page]}
            if page + 1 < len(CURSORS):
                listing["nextCursor"] = CURSORS[page + 1]
            result(id, listing)
        elif method == "tools/call":
            self.call(id, str(params.get("name")), params.get("arguments") or {})
        else:
            error(id, -32601, "Method not found")

    def call(self, id: Any, name: str, arguments: dict[str, Any]) -> None:
        if name == "echo":
            result(
                id,
                {
                    "content": [{"type": "text", "text": "echoed"}],
                    "structuredContent": {"echo": arguments},
                },
            )
        elif name == "garbage":
            sys.stdout.write("this line is not JSON\n\n")
            send({"jsonrpc": "2.0", "id": 424242, "result": {}})
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": 1},
                }
            )
            send({"hello": "not JSON-RPC"})
            result(id, {"content": [{"type": "text", "text": "fine"}]})
        elif name == "crash":
            say("crashing")
            sys.exit(3)
        elif name == "ping":
            self.waiting_ping = id
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            send(
                {"jsonrpc": "2.0", "id": "srv-2", "method": "sampling/createMessage", "params": {}}
            )
        elif name == "hang":
            say(f"hanging {id}")
        elif name == "bad":
            send({"jsonrpc": "2.0", "id": id, "result": 5})
        elif name == "invalid":
            error(id, -32602, "b must be a number")
        elif name == "unknown":
            error(id, -32602, "Unknown tool: unknown")
        elif name == "stderr":
            say("x" * 10000)
            say("after the long line")
            result(id, {"content": [{"type": "text", "text": "said"}]})
        elif name == "pid":
            result(id, {"content": [], "structuredContent": {"pid": os.getpid()}})
        elif name == "failed":
            result(id, {"content": [{"type": "text", "text": "it broke"}], "isError": True})
        else:
            error(id, -32602, f"Unknown tool: {name}")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
    version = sys.argv[2] if mode == "version" else "2025-06-18"
    say(f"scripted server {os.getpid()} in mode {mode}")
    if mode == "exit":
        sys.exit(3)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, lambda *_: say("ignoring SIGTERM"))
    server = Server(mode, version)
    for line in sys.stdin:
        if mode == "mute" or not line.strip():
            continue
        server.handle(json.loads(line))
    say("input ended")
    if mode == "stubborn":
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
