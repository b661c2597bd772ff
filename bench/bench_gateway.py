"""The gateway's calls per second and p99 latency with 1, 64 and 512 concurrent clients, against
the official SDK's own server serving the same tool directly, side by side in one run.

Run: ``.venv/bin/python -m bench.bench_gateway [--seconds 5]`` (about a minute; not in the tests).

Both subjects are separate processes on loopback: the official SDK's server
(``_mcp_bench_server.py``: ``echo``, stateless, JSON answers), and ``amends-toolkit serve`` with
that server as its one source (``bench__echo``: the gateway's session per call, input check,
actor and its own call to the server included). The load is ``tools/call`` in the stateless
2026-07-28 protocol from N workers, each sending its next call when the last is answered, over
one httpx2 client; a worker is one client. Calls/s and p50/p99 are over ``--seconds`` per level;
the ratio is the gateway's calls/s over the server's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from bench.bench_mcp import HEADERS, META, free_port, start_server

SRC = str(Path(__file__).resolve().parents[1] / "src")


def start_gateway(upstream: int, port: int, directory: Path) -> subprocess.Popen[bytes]:
    config = directory / "gateway.toml"
    config.write_text(
        f'[[sources]]\nname = "bench"\nmcp = "http://127.0.0.1:{upstream}/mcp"\n'
        f'[policy]\nallow = ["bench__*"]\n[serve]\nport = {port}\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "amends_toolkit", "serve", str(config)],
        env={**os.environ, "PYTHONPATH": SRC},
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return process
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the gateway did not start")


async def load(url: str, tool: str, workers: int, seconds: float) -> tuple[float, float, float]:
    """Calls per second, p50 and p99 in milliseconds."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "hello"}, "_meta": META},
        }
    ).encode()
    headers = {**HEADERS, "Mcp-Name": tool, "Content-Type": "application/json"}
    latencies: list[float] = []
    limits = httpx2.Limits(max_connections=workers, max_keepalive_connections=workers)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
        # Open the connections first, so that the clock measures calls and not handshakes.
        async def warm() -> None:
            await client.post(url, content=body, headers=headers)

        async with anyio.create_task_group() as tasks:
            for _ in range(workers):
                tasks.start_soon(warm)
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                if response.status_code != 200 or b'"isError":true' in response.content:
                    raise SystemExit(f"a call failed: {response.status_code} {response.text[:200]}")
                latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for _ in range(workers):
                tasks.start_soon(worker)
        elapsed = time.perf_counter() - began
    cuts = statistics.quantiles(latencies, n=100)
    return len(latencies) / elapsed, cuts[49] * 1000, cuts[98] * 1000


async def main(seconds: float, levels: list[int]) -> None:
    upstream_port, gateway_port = free_port(), free_port()
    server = start_server(upstream_port)
    with tempfile.TemporaryDirectory() as directory:
        gateway = start_gateway(upstream_port, gateway_port, Path(directory))
        try:
            print(f"{'clients':>7}  {'subject':<22}{'calls/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
            for workers in levels:
                direct = await load(
                    f"http://127.0.0.1:{upstream_port}/mcp", "echo", workers, seconds
                )
                through = await load(
                    f"http://127.0.0.1:{gateway_port}/mcp", "bench__echo", workers, seconds
                )
                for name, (rate, p50, p99) in (
                    ("SDK server directly", direct),
                    ("gateway", through),
                ):
                    print(f"{workers:>7}  {name:<22}{rate:>9.0f}{p50:>9.1f}{p99:>9.1f}")
                print(f"{'':>7}  gateway / direct: {through[0] / direct[0]:.2f}x the calls/s")
        finally:
            gateway.terminate()
            gateway.wait(30)
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per level")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 64, 512])
    options = parser.parse_args()
    anyio.run(main, options.seconds, options.clients)
