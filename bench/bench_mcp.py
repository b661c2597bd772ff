"""MCP calls per second over loopback: our source against a bare JSON-RPC client and the official
SDK's client, side by side in one run, against the official SDK's server in another process.

Run: ``.venv/bin/python bench/bench_mcp.py`` (about a minute; not part of the tests).

Subjects, each sending ``tools/call echo`` in the stateless 2026-07-28 protocol, one call after
another and with 16 callers at a time, over one shared client:

- bare JSON-RPC: an ``httpx.AsyncClient`` POSTing the request with its headers and ``_meta``,
  reading the JSON answer: the floor, the cost of HTTP and the server alone;
- ``at.mcp.http``: our source, called directly, over the same httpx client and over an httpx2
  one (whose pool holds up better with many callers);
- ``at.mcp.http`` through its actor (``Runtime.spawn``) and an assembled toolkit (input check);
- the official SDK's ``mcp.Client`` (``mode="2026-07-28"``).

Figures are the median of ``--rounds`` rounds; the ratio is the subject's time per call over the
bare client's, measured in the same round.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx
import httpx2
from mcp import Client

import amends_toolkit as at

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "echo",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    script = Path(__file__).with_name("_mcp_bench_server.py")
    process = subprocess.Popen([sys.executable, str(script), str(port)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the bench server did not start")


Call = Callable[[], Awaitable[object]]


async def rate(call: Call, calls: int, concurrency: int) -> float:
    each = calls // concurrency

    async def caller() -> None:
        for _ in range(each):
            await call()

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for _ in range(concurrency):
            tasks.start_soon(caller)
    return each * concurrency / (time.perf_counter() - started)


async def main(calls: int, rounds: int) -> None:
    port = free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}/mcp"
    ids = iter(range(1, 10**9))
    try:
        async with (
            httpx.AsyncClient(limits=httpx.Limits(max_connections=32)) as client,
            httpx2.AsyncClient(limits=httpx2.Limits(max_connections=32)) as client2,
            at.Runtime() as runtime,
            Client(url, mode="2026-07-28") as sdk,
            AsyncExitStack() as stack,
        ):

            async def bare() -> object:
                body = {
                    "jsonrpc": "2.0",
                    "id": next(ids),
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": META},
                }
                answer = await client.post(url, json=body, headers=HEADERS)
                return answer.json()["result"]

            # The bare sources run in their own lifespans (where their state lives), no actor.
            source = at.mcp.http(name="bench", url=url, client=client)
            source2 = at.mcp.http(name="bench", url=url, client=client2)
            await stack.enter_async_context(source.lifespan())
            await stack.enter_async_context(source2.lifespan())
            await source2.discover()
            ref = await runtime.spawn(at.mcp.http(name="bench", url=url, client=client))
            toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
            await source.discover()

            subjects: list[tuple[str, Call]] = [
                ("bare JSON-RPC (baseline)", bare),
                ("at.mcp.http", lambda: source.call("echo", {"text": "hi"})),
                ("at.mcp.http over httpx2", lambda: source2.call("echo", {"text": "hi"})),
                ("actor + toolkit", lambda: toolkit.call("bench__echo", {"text": "hi"})),
                ("official SDK client", lambda: sdk.call_tool("echo", {"text": "hi"})),
            ]
            for concurrency in (1, 16):
                figures: dict[str, list[float]] = {label: [] for label, _ in subjects}
                ratios: dict[str, list[float]] = {label: [] for label, _ in subjects}
                for _ in range(rounds):
                    baseline = 0.0
                    for label, call in subjects:
                        await rate(call, calls // 10, concurrency)  # warm up
                        per_second = await rate(call, calls, concurrency)
                        baseline = baseline or per_second
                        figures[label].append(per_second)
                        ratios[label].append(baseline / per_second)
                print(f"\n{concurrency} caller(s) at a time, {calls} calls, median of {rounds}")
                for label, _ in subjects:
                    print(
                        f"  {label:<26} {statistics.median(figures[label]):>8,.0f} calls/s  "
                        f"{statistics.median(ratios[label]):>5.2f}x the baseline's time"
                    )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    anyio.run(main, arguments.calls, arguments.rounds)
