"""What each MCP client makes the official SDK's server do: the server's instructions per
``tools/call echo``, counted by valgrind's callgrind, the server (``_mcp_bench_server.py``,
stateless) under callgrind and the clients not counted. Not part of ``python -m bench``; it needs
``valgrind``.

    python -m bench.server_instructions [--calls 100] [--repeats 2]

Subjects, one caller each, taking turns: the bare JSON-RPC client of ``bench.mcp_client``; the
same with ``io.modelcontextprotocol/clientInfo`` in its ``_meta`` (which ``at.mcp.http`` and the
SDK's client send, and the bare client does not); ``at.mcp.http``; the SDK's ``mcp.Client``. Each
subject's calls are counted alone, between two dumps of the server's counters
(``callgrind_control --dump``): the difference is what that client's requests cost the server.
The server runs some 50 times slower under valgrind, so timeouts are long; what is counted is
the server's work, not its timing. A run takes a few minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client

import amends_toolkit as at
from bench._harness import HERE, Call, free_port, listens
from bench.mcp_client import META, MODERN_HEADERS, bare_client

TIMEOUT = 3600.0
INPUT: at.JsonObject = {"text": "hi"}


def dumped(pid: int, where: Path, label: str) -> int:
    """Dump the server's counters (which zeroes them); the instructions since the last dump."""
    before = set(where.glob("counted.*"))
    subprocess.run(
        ["callgrind_control", "--dump=" + label, str(pid)], check=True, capture_output=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for dump in set(where.glob("counted.*")) - before:
            total = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
            if total is not None:
                return int(total[1])
        time.sleep(0.2)
    raise SystemExit("callgrind wrote no dump")


async def measure(server: int, port: int, where: Path, calls: int, repeats: int) -> None:
    """Each subject's turns against the server (process ``server``) listening on ``port``."""
    url = f"http://127.0.0.1:{port}/mcp"
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx2.AsyncClient(timeout=TIMEOUT))
        ids = itertools.count(1)
        meta = {**META, "io.modelcontextprotocol/clientInfo": {"name": "bare", "version": "1"}}

        async def bare_with_client_info() -> object:
            params = {"name": "echo", "arguments": INPUT, "_meta": meta}
            body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
            answer = await client.post(url, json=body, headers=MODERN_HEADERS)
            return answer.json()["result"]

        source = at.mcp.http(name="bench", url=url, client=client, timeout=TIMEOUT)
        await stack.enter_async_context(source.lifespan())
        sdk = await stack.enter_async_context(Client(url, mode="2026-07-28"))
        subjects: dict[str, Call] = {
            "bare": await stack.enter_async_context(bare_client(client, url, "stateless")),
            "bare + clientInfo": bare_with_client_info,
            "at.mcp.http": functools.partial(source.call, "echo", INPUT),
            "SDK mcp.Client": functools.partial(sdk.call_tool, "echo", INPUT),
        }
        counts: dict[str, list[float]] = {label: [] for label in subjects}
        for repeat in range(repeats):
            for label in list(subjects) if repeat % 2 == 0 else list(subjects)[::-1]:
                for _ in range(10):  # warm: whatever the server keeps for this client
                    await subjects[label]()
                dumped(server, where, "warm")
                for _ in range(calls):
                    await subjects[label]()
                counts[label].append(dumped(server, where, "counted") / calls)
    bare = min(counts["bare"])
    for label, per_call in counts.items():
        shown = ", ".join(f"{count / 1e3:,.1f} k" for count in per_call)
        print(f"{label:18} server instructions a call: {shown}  ({min(per_call) / bare:.3f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.server_instructions")
    parser.add_argument("--calls", type=int, default=100, help="calls of a subject a turn")
    parser.add_argument("--repeats", type=int, default=2)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        port = free_port()
        server = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={where}/counted",
                sys.executable,
                str(HERE / "_mcp_bench_server.py"),
                str(port),
            ],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONHASHSEED": "0"},
            stderr=subprocess.DEVNULL,
        )
        try:
            while not listens(port):
                if server.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.5)
            anyio.run(measure, server.pid, port, where, arguments.calls, arguments.repeats)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
