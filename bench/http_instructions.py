"""Instructions per HTTP-source call, counted by valgrind's callgrind: a raw ``client.get`` reading
the JSON answer against the ``at.http`` source and ``Session -> Toolkit -> actor -> source``,
over one ``httpx2`` client, against ``bench/_http_bench_server.py`` (in its own process, not
counted). The HTTP counterpart of :mod:`bench.client_instructions` (see its docstring for how a
turn is counted); not part of ``python -m bench``; it needs ``valgrind`` and a C compiler.

    python -m bench.http_instructions [--concurrency 1] [--calls 512] [--repeats 2]

Subjects as in :mod:`bench.http_source`: ``GET /items/7`` raw, the source's
``call("get_item", {"item_id": "7"})`` (path ``/items/{item_id}``), and the whole path.
"""

from __future__ import annotations

import argparse
import contextlib

import httpx2

import amends_toolkit as at
from amends_toolkit import JsonObject
from bench._harness import POOL, Call, pool_limits
from bench.client_instructions import count_turns, counted_per_call, options, run
from bench.http_source import OPERATION

SUBJECTS = ("raw", "source", "session-actor")
ITEM: JsonObject = {"item_id": "7"}


async def counted(arguments: argparse.Namespace) -> None:
    """The client under callgrind: each subject's turns, each counted alone."""
    base_url = f"http://127.0.0.1:{arguments.port}"
    timeout = 3600.0
    async with contextlib.AsyncExitStack() as stack:
        limits = pool_limits(httpx2.Limits, POOL)
        client = await stack.enter_async_context(
            httpx2.AsyncClient(base_url=base_url, timeout=timeout, limits=limits)
        )
        source = at.http.make(
            name="api", base_url=base_url, operations=[OPERATION], client=client, timeout=timeout
        )
        runtime = await stack.enter_async_context(at.Runtime())
        ref = await runtime.spawn(
            at.http.make(
                name="api",
                base_url=base_url,
                operations=[OPERATION],
                client=client,
                timeout=timeout,
            )
        )
        toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
        session = await stack.enter_async_context(at.Session(toolkit, approve=lambda _, __: False))

        async def raw() -> object:
            return (await client.get("/items/7")).json()

        async def direct() -> object:
            return await source.call("get_item", ITEM)

        async def whole() -> object:
            return await session.call("api__get_item", ITEM)

        made: dict[str, Call] = {"raw": raw, "source": direct, "session-actor": whole}
        await count_turns(made, arguments)


def measure(arguments: argparse.Namespace) -> None:
    per_call = counted_per_call(
        "bench.http_instructions", ("_http_bench_server.py",), [], arguments
    )
    raw, source, whole = (per_call[label] for label in SUBJECTS)
    print(
        f"c={arguments.concurrency:<3}  instructions per call: "
        f"raw GET {raw / 1e6:.3f} M  at.http {source / 1e6:.3f} M  ({source / raw:.3f}x)  "
        f"Session→Toolkit→actor {whole / 1e6:.3f} M  ({whole / raw:.3f}x)"
    )


def main() -> None:
    run(
        options("python -m bench.http_instructions", concurrency=1, calls=512).parse_args(),
        counted,
        measure,
    )


if __name__ == "__main__":
    main()
