"""A hostile MCP server over stdio: ``python stdio_peer.py [deaf]``.

Its one tool, ``answer``, answers as its arguments say: ``{"size": n}`` a text of ``n`` bytes
on one line (written a piece at a time, so the server never holds it), ``{"depth": n}`` a
result nested ``n`` levels, anything else ``"ok"``. In ``deaf`` mode it shrinks its input pipe
to one page, answers ``initialize``, reads the ``initialized`` notification and then reads
nothing more, ever.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
from typing import Any

TOOL = {"name": "answer", "inputSchema": {"type": "object"}}


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message: dict[str, Any]) -> None:
    write(json.dumps(message).encode() + b"\n")


def read_line() -> bytes:
    """One line, a byte at a time: nothing past it is taken from the pipe."""
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            sys.exit(0)
        line += byte
    return line


def answer(id: Any, arguments: dict[str, Any]) -> None:
    if "size" in arguments:
        write(f'{{"jsonrpc": "2.0", "id": {json.dumps(id)}, "result": {{"content": '.encode())
        write(b'[{"type": "text", "text": "')
        for _ in range(arguments["size"] // 65536):
            write(b"x" * 65536)
        write(b'"}]}}\n')
    elif "depth" in arguments:
        depth = arguments["depth"]
        nested = "[" * depth + "]" * depth
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(id)}, "result": {{"structuredContent": '
        write((head + f'{{"a": {nested}}}, "content": []}}}}\n').encode())
    else:
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}})


def main() -> None:
    deaf = sys.argv[1:] == ["deaf"]
    if deaf:
        fcntl.fcntl(0, fcntl.F_SETPIPE_SZ, 4096)
    while True:
        message = json.loads(read_line())
        method, id = message.get("method"), message.get("id")
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": version}})
        elif method == "notifications/initialized" and deaf:
            sys.stderr.write("deaf\n")
            sys.stderr.flush()
            while True:
                signal.pause()  # reads nothing more; only a signal ends it
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": id, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            answer(id, message["params"].get("arguments", {}))


if __name__ == "__main__":
    main()
