"""The gateway (``amends-toolkit serve``) against the official SDK's own server serving the same
tool directly: ``tools/call`` in the stateless 2026-07-28 protocol from 1, 64 and 512 clients at
once, each sending its next call when the last is answered, over one ``httpx2`` client.

Both are processes of their own on loopback: the SDK's server (``_mcp_bench_server.py``, ``echo``)
and the gateway with that server as its one source (``bench__echo``: the gateway's session per
call, the input check, the actor and its own call to the server behind it). The ratio is the
gateway's calls per second over the server's own, measured in the same rounds; and a second
gateway, with ``[auth] type = "keys"``, over the first (``type = "none"``): what a key costs a call.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx2

from bench._harness import (
    Call,
    Figure,
    compare,
    free_port,
    pool_limits,
    running,
    server_process,
)
from bench.mcp_client import META, MODERN_HEADERS

SRC = str(Path(__file__).resolve().parents[1] / "src")
CALLS = {1: 150, 64: 960, 512: 1_536}
KEY = secrets.token_urlsafe(32)
KEYS = '[auth]\ntype = "keys"\nkeys = { bench = "${BENCH_KEY}", other = "${OTHER_KEY}" }\n'


@contextlib.contextmanager
def gateway_process(upstream: int, auth: str = '[auth]\ntype = "none"\n') -> Iterator[int]:
    """``amends-toolkit serve`` over the server at ``upstream``, with this ``[auth]``; yields the
    gateway's port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "gateway.toml"
        config.write_text(
            f'[[sources]]\nname = "bench"\nmcp = "http://127.0.0.1:{upstream}/mcp"\n'
            f'[policy]\nallow = ["bench__*"]\n[serve]\nport = {port}\n{auth}'
        )
        with running(
            [sys.executable, "-m", "amends_toolkit", "serve", str(config)],
            ready=lambda: serves(port),
            what="the gateway",
            env={
                **os.environ,
                "PYTHONPATH": SRC,
                "BENCH_KEY": KEY,
                "OTHER_KEY": secrets.token_urlsafe(32),
            },
            quiet=True,
        ):
            yield port


def serves(port: int) -> bool:
    """Whether the gateway on ``port`` says it is ready."""
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
    except httpx2.TransportError:
        return False


def caller(client: httpx2.AsyncClient, url: str, tool: str, key: str | None = None) -> Call:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "hello"}, "_meta": META},
        }
    ).encode()
    headers = {**MODERN_HEADERS, "Mcp-Name": tool, "Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"

    async def call() -> object:
        response = await client.post(url, content=body, headers=headers)
        if response.status_code != 200 or b'"isError":true' in response.content:
            raise SystemExit(f"a call failed: {response.status_code} {response.text[:200]}")
        return response

    return call


async def run(*, scale: float, rounds: int) -> Sequence[Figure]:
    figures: list[Figure] = []
    with (
        server_process("_mcp_bench_server.py") as upstream,
        gateway_process(upstream.port) as port,
        gateway_process(upstream.port, KEYS) as keyed_port,
    ):
        for concurrency, calls in CALLS.items():
            async with httpx2.AsyncClient(
                limits=pool_limits(httpx2.Limits, concurrency),
                timeout=60,
            ) as client:
                group = f"gateway, {concurrency} client(s) at a time"
                print(f"  {group}", flush=True)
                direct = "the SDK's server directly"
                figures += await compare(
                    group,
                    [
                        (
                            direct,
                            caller(client, f"http://127.0.0.1:{upstream.port}/mcp", "echo"),
                            "",
                        ),
                        (
                            "through the gateway",
                            caller(client, f"http://127.0.0.1:{port}/mcp", "bench__echo"),
                            direct,
                        ),
                        (
                            "through the gateway, with a key",
                            caller(
                                client,
                                f"http://127.0.0.1:{keyed_port}/mcp",
                                "bench__echo",
                                KEY,
                            ),
                            "through the gateway",
                        ),
                    ],
                    calls=int(calls * scale),
                    concurrency=concurrency,
                    rounds=rounds,
                )
    return figures
