"""The HTTP source side by side with raw requests: ``GET /items/{item_id}`` on a Starlette app in
its own process, at 1, 64 and 512 callers at a time, over httpx and httpx2.

Subjects: a raw ``client.get`` reading the JSON answer (the baseline of its HTTP library); the
source of ``at.http.make`` called directly (request built from the template, answer read within
its limit); and the whole path a host uses, ``Session -> Toolkit -> actor -> source``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import httpx
import httpx2

import amends_toolkit as at
from amends_toolkit import JsonObject
from bench._harness import Call, Figure, ServerClock, compare, pool_limits, server_process

OPERATION = at.http.Operation(
    definition=at.ToolDefinition(
        name="get_item",
        description="One item.",
        input_schema={
            "type": "object",
            "properties": {"item_id": {"type": "string"}},
            "required": ["item_id"],
        },
    ),
    request=at.http.RequestTemplate(
        method="GET",
        path="/items/{item_id}",
        params={"item_id": at.http.Param(location="path", name="item_id")},
    ),
)
CALLS = {1: 250, 64: 1_600, 512: 3_072}
"""Calls of each subject a round (at ``--scale 1``): 250 at one caller, where the A/A pair's
second raw GET runs too (300 when it did not: the same calls in all)."""
SOURCE = "at.http source, httpx2"
THROUGH_SESSION = "Session→Toolkit→actor→at.http, httpx2"
"""The subjects the client-CPU target is about, against the raw GET over the same client."""
AGAIN = "raw GET, httpx2, again (A/A)"
"""A second raw GET against the first, at every level: the measurement's own swing."""


async def run_group(
    base_url: str,
    concurrency: int,
    *,
    scale: float,
    rounds: int,
    server: ServerClock | None = None,
) -> list[Figure]:
    timeout = 60.0
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                base_url=base_url,
                limits=pool_limits(httpx.Limits, concurrency),
                timeout=timeout,
            )
        )
        client2 = await stack.enter_async_context(
            httpx2.AsyncClient(
                base_url=base_url,
                limits=pool_limits(httpx2.Limits, concurrency),
                timeout=timeout,
            )
        )
        runtime = await stack.enter_async_context(at.Runtime())
        source = at.http.make(name="api", base_url=base_url, operations=[OPERATION], client=client)
        source2 = at.http.make(
            name="api", base_url=base_url, operations=[OPERATION], client=client2
        )
        ref = await runtime.spawn(
            at.http.make(name="api", base_url=base_url, operations=[OPERATION], client=client2)
        )
        toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
        session = await stack.enter_async_context(at.Session(toolkit, approve=lambda _, __: False))

        async def raw() -> object:
            return (await client.get("/items/7")).json()

        async def raw2() -> object:
            return (await client2.get("/items/7")).json()

        item: JsonObject = {"item_id": "7"}
        subjects: list[tuple[str, Call, str]] = [
            ("raw GET, httpx", raw, ""),
            ("raw GET, httpx2", raw2, ""),
            (AGAIN, raw2, "raw GET, httpx2"),
            ("at.http source, httpx", lambda: source.call("get_item", item), "raw GET, httpx"),
            (SOURCE, lambda: source2.call("get_item", item), "raw GET, httpx2"),
            (
                THROUGH_SESSION,
                lambda: session.call("api__get_item", item),
                "raw GET, httpx2",
            ),
        ]
        group = f"HTTP source, {concurrency} at a time"
        print(f"  {group}", flush=True)
        return await compare(
            group,
            subjects,
            calls=int(CALLS[concurrency] * scale),
            concurrency=concurrency,
            rounds=rounds,
            server=server,
        )


async def run(*, scale: float, rounds: int) -> Sequence[Figure]:
    figures: list[Figure] = []
    with server_process("_http_bench_server.py") as server:
        for concurrency in CALLS:
            figures += await run_group(
                f"http://127.0.0.1:{server.port}",
                concurrency,
                scale=scale,
                rounds=rounds,
                server=server.cpu_clock(),
            )
    return figures
