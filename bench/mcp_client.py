"""MCP clients side by side: ``tools/call echo`` over loopback, stateless (2026-07-28) and in
sessions (2025-11-25), at 1, 64 and 512 callers at a time.

Servers, each in its own process: a minimal raw ASGI server (``_raw_mcp_server.py``), so what is
measured is the client; and the official SDK's own server, for realism. Subjects, each over one
client shared by its callers:

- bare JSON-RPC over httpx and over httpx2: a POST with the request's headers and ``_meta`` and
  the JSON answer read (the floor: HTTP and the server alone); each is the baseline of the
  subjects over the same HTTP library;
- ``at.mcp.http`` called directly, over httpx and over httpx2;
- the whole path a host uses: ``Session -> Toolkit -> actor -> at.mcp.http`` over httpx2;
- the official SDK's ``mcp.Client``, fastmcp's ``Client`` and pydantic-ai's ``MCPToolset`` (the
  clients a user would pick instead), each with its own HTTP client.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence

import fastmcp
import httpx
import httpx2
from mcp import Client
from pydantic_ai.mcp import MCPToolset

import amends_toolkit as at
from bench._harness import Call, Figure, ServerClock, compare, pool_limits, server_process

MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "echo",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
CONCURRENCY = (1, 64, 512)
OURS = "at.mcp.http, httpx2"
"""The subject the issue's targets are about, and the same calls through the whole library."""
THROUGH_SESSION = "Session→Toolkit→actor→at.mcp.http, httpx2"
SDK = "official SDK mcp.Client"
AGAIN = "bare JSON-RPC, httpx2, again (A/A)"
"""A second bare client against the first, at every level: the measurement's own swing."""


def calls_for(concurrency: int, scale: float) -> int:
    # At one caller subjects differ by a tenth of a millisecond a call: enough calls for a few
    # dozen slices of ONE_CALLER_SLICE each (520, not 600, since the A/A pair's second bare
    # client runs at one caller too: the same calls in all).
    return int({1: 520, 64: 1_600, 512: 3_072}[concurrency] * scale)


@contextlib.asynccontextmanager
async def bare_client(
    client: httpx.AsyncClient | httpx2.AsyncClient, url: str, mode: str
) -> AsyncIterator[Call]:
    """A 20-line JSON-RPC client: the floor every other subject is compared with."""
    ids = itertools.count(1)
    headers = dict(MODERN_HEADERS)
    if mode == "session":
        headers = {"Accept": "application/json, text/event-stream"}
        begun = await client.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bare", "version": "1"},
                },
            },
            headers=headers,
        )
        headers["Mcp-Session-Id"] = begun.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        await client.post(
            url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )

    async def call() -> object:
        params: dict[str, object] = {"name": "echo", "arguments": {"text": "hi"}}
        if mode == "stateless":
            params["_meta"] = META
        body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
        answer = await client.post(url, json=body, headers=headers)
        return answer.json()["result"]

    yield call


async def run_group(
    server: str,
    url: str,
    mode: str,
    concurrency: int,
    *,
    scale: float,
    rounds: int,
    others: bool,
    clock: ServerClock | None = None,
) -> list[Figure]:
    # Callers share a pool of at most 64 connections, as a host would hold one.
    timeout = 60.0
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                limits=pool_limits(httpx.Limits, concurrency),
                timeout=timeout,
            )
        )
        client2 = await stack.enter_async_context(
            httpx2.AsyncClient(
                limits=pool_limits(httpx2.Limits, concurrency),
                timeout=timeout,
            )
        )
        runtime = await stack.enter_async_context(at.Runtime())
        bare = await stack.enter_async_context(bare_client(client, url, mode))
        bare2 = await stack.enter_async_context(bare_client(client2, url, mode))
        again = await stack.enter_async_context(bare_client(client2, url, mode))
        source = at.mcp.http(name="bench", url=url, client=client)
        source2 = at.mcp.http(name="bench", url=url, client=client2)
        await stack.enter_async_context(source.lifespan())
        await stack.enter_async_context(source2.lifespan())
        ref = await runtime.spawn(at.mcp.http(name="bench", url=url, client=client2))
        toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
        session = await stack.enter_async_context(at.Session(toolkit, approve=lambda _, __: False))
        subjects: list[tuple[str, Call, str]] = [
            ("bare JSON-RPC, httpx", bare, ""),
            ("bare JSON-RPC, httpx2", bare2, ""),
            (AGAIN, again, "bare JSON-RPC, httpx2"),
            (
                "at.mcp.http, httpx",
                lambda: source.call("echo", {"text": "hi"}),
                "bare JSON-RPC, httpx",
            ),
            (
                OURS,
                lambda: source2.call("echo", {"text": "hi"}),
                "bare JSON-RPC, httpx2",
            ),
            (
                THROUGH_SESSION,
                lambda: session.call("bench__echo", {"text": "hi"}),
                "bare JSON-RPC, httpx2",
            ),
        ]
        if others:
            sdk = await stack.enter_async_context(
                Client(url, mode="2026-07-28" if mode == "stateless" else "legacy")
            )
            subjects.append(
                (
                    SDK,
                    lambda: sdk.call_tool("echo", {"text": "hi"}),
                    "bare JSON-RPC, httpx",
                )
            )
            if mode == "session":
                fast = await stack.enter_async_context(fastmcp.Client(url))
                subjects.append(
                    (
                        "fastmcp Client",
                        lambda: fast.call_tool("echo", {"text": "hi"}),
                        "bare JSON-RPC, httpx",
                    )
                )
                toolset: MCPToolset[None] = MCPToolset(url)
                await stack.enter_async_context(toolset)
                subjects.append(
                    (
                        "pydantic-ai MCPToolset",
                        lambda: toolset.direct_call_tool("echo", {"text": "hi"}),
                        "bare JSON-RPC, httpx",
                    )
                )
        group = f"MCP client, {server} server, {mode}, {concurrency} at a time"
        print(f"  {group}", flush=True)
        figures = await compare(
            group,
            subjects,
            calls=calls_for(concurrency, scale),
            concurrency=concurrency,
            rounds=rounds,
            server=clock,
        )
        return checked(figures, server=clock is not None)


def checked(figures: list[Figure], *, server: bool) -> list[Figure]:
    """A group's figures, once the bench has checked itself on them: the A/A pair measured
    against the client it repeats, and, with the server's clock, the server's share of a core in
    every subject's turns (a share past one core and a half is no single server's).

    Raises:
        SystemExit: The figures say the bench measured something else than it means to.
    """
    for figure in figures:
        if figure.subject == AGAIN and figure.baseline != "bare JSON-RPC, httpx2":
            raise SystemExit(f"the A/A pair is measured against {figure.baseline!r}")
        share = figure.server_cpu_share
        if server and (share is None or not 0 < share < 1.5):
            raise SystemExit(f"{figure.subject}: the server's share of a core is {share}")
    return figures


async def run(*, scale: float, rounds: int) -> Sequence[Figure]:
    figures: list[Figure] = []
    for mode in ("stateless", "session"):
        with server_process("_raw_mcp_server.py", mode) as raw:
            url = f"http://127.0.0.1:{raw.port}/mcp"
            for concurrency in CONCURRENCY:
                figures += await run_group(
                    "raw",
                    url,
                    mode,
                    concurrency,
                    scale=scale,
                    rounds=rounds,
                    others=True,
                    clock=raw.cpu_clock(),
                )
    with server_process("_mcp_bench_server.py") as sdk:
        url = f"http://127.0.0.1:{sdk.port}/mcp"
        for concurrency in (1, 64):
            figures += await run_group(
                "official SDK",
                url,
                "stateless",
                concurrency,
                scale=scale / 2,
                rounds=rounds,
                others=True,
                clock=sdk.cpu_clock(),
            )
    return figures
