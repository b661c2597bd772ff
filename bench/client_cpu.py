"""A quick look at the MCP client's own CPU per call at one caller: ``at.mcp.http`` against the
bare JSON-RPC client, both over one ``httpx2`` client, against the raw echo server (in its own
process), stateless and in a session. Not part of ``python -m bench``; for profiling.

    python -m bench.client_cpu [--rounds 7] [--calls 400] [--mode stateless session] [--profile]

In each round the two subjects take turns, ``BLOCK`` calls at a time, each block's CPU time
(``time.process_time``) added to its subject's; the figures are the medians of the rounds' CPU
per call and of their ratios. ``--profile`` runs each subject under cProfile instead and writes
its statistics to ``/tmp/client_cpu.MODE.SUBJECT.prof``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import gc
import statistics
import time

import anyio
import httpx2

import amends_toolkit as at
from bench._harness import Call, sample, server_process
from bench.mcp_client import bare_client

BLOCK = 10
"""Calls of one subject between two of the other's, so that both see the same machine."""


async def measure(mode: str, *, rounds: int, calls: int, profile: bool) -> None:
    with server_process("_raw_mcp_server.py", mode) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(httpx2.AsyncClient(timeout=60.0))
            bare = await stack.enter_async_context(bare_client(client, url, mode))
            source = at.mcp.http(name="bench", url=url, client=client)
            await stack.enter_async_context(source.lifespan())

            async def ours() -> object:
                return await source.call("echo", {"text": "hi"})

            subjects: list[tuple[str, Call]] = [("bare", bare), ("at.mcp.http", ours)]
            for _, call in subjects:
                await sample(call, calls // 4, 1)
            if profile:
                for label, call in subjects:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    for _ in range(calls):
                        await call()
                    profiler.disable()
                    path = f"/tmp/client_cpu.{mode}.{label}.prof"
                    profiler.dump_stats(path)
                    print(f"{label}: {path}")
                return
            cpu: dict[str, list[float]] = {"bare": [], "at.mcp.http": []}
            gc.collect()
            gc.freeze()  # as bench._harness.compare does
            for _ in range(rounds):
                spent = {"bare": 0.0, "at.mcp.http": 0.0}
                gc.collect()
                for block in range(calls // BLOCK):
                    for label, call in subjects if block % 2 == 0 else subjects[::-1]:
                        started = time.process_time()
                        for _ in range(BLOCK):
                            await call()
                        spent[label] += time.process_time() - started
                for label, total in spent.items():
                    cpu[label].append(total / (calls // BLOCK * BLOCK) * 1e6)
            ratios = [o / b for o, b in zip(cpu["at.mcp.http"], cpu["bare"], strict=True)]
            print(
                f"{mode:9}  bare {statistics.median(cpu['bare']):6.0f} µs  "
                f"at.mcp.http {statistics.median(cpu['at.mcp.http']):6.0f} µs  "
                f"ratio {statistics.median(ratios):.2f}x  "
                f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cpu")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--mode", nargs="*", default=["stateless", "session"])
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()
    for mode in arguments.mode:
        anyio.run(
            functools.partial(
                measure,
                mode,
                rounds=arguments.rounds,
                calls=arguments.calls,
                profile=arguments.profile,
            )
        )


if __name__ == "__main__":
    main()
