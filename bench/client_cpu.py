"""A quick look at the client's own CPU per MCP call: the bare JSON-RPC client against the
library's layers over it, all over one ``httpx2`` client, against the raw echo server (in its own
process), stateless and in a session. Not part of ``python -m bench``; for profiling.

    python -m bench.client_cpu [--rounds 7] [--calls 400] [--mode stateless session]
        [--subjects bare source ...] [--concurrency 1] [--profile]

Subjects (``--subjects``; ``bare`` is always measured, as the baseline):

- ``bare``: the 20-line JSON-RPC client of ``bench.mcp_client``;
- ``bare-again``: a second one, whose ratio to the first is the measurement's own swing (A/A);
- ``source``: ``at.mcp.http`` called directly;
- ``toolkit``: ``toolkit.call`` over the source (no actor);
- ``session``: ``Session -> Toolkit -> source`` (no actor);
- ``actor``: ``toolkit.call`` over the source's actor (``Runtime.spawn``, inline calls);
- ``session-actor``: ``Session -> Toolkit -> actor -> source``, the library's whole path.

In each round the subjects take turns, ``BLOCK`` calls a caller at a time (their order rotated
each turn and each round), each turn's CPU time (``time.process_time``) added to its subject's; the figures are
the medians of the rounds' CPU per call and of their ratios to the bare client's. What lives
before the rounds is frozen out of garbage collection, as ``bench._harness.compare`` does.
``--profile`` runs each subject under cProfile instead and writes its statistics to
``/tmp/client_cpu.MODE.SUBJECT.prof``.
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
from bench._harness import POOL, Call, pool_limits, sample, server_process
from bench.mcp_client import bare_client

BLOCK = 10
"""Calls a caller makes in one subject's turn, so that all subjects see the same machine."""

SUBJECTS = ("bare-again", "source", "toolkit", "session", "actor", "session-actor")
INPUT: at.JsonObject = {"text": "hi"}


async def measure(
    mode: str, *, subjects: list[str], rounds: int, calls: int, concurrency: int, profile: bool
) -> None:
    with server_process("_raw_mcp_server.py", mode) as server:
        port = server.port
        url = f"http://127.0.0.1:{port}/mcp"
        async with contextlib.AsyncExitStack() as stack:
            limits = pool_limits(httpx2.Limits, POOL)
            client = await stack.enter_async_context(
                httpx2.AsyncClient(timeout=60.0, limits=limits)
            )
            runtime = await stack.enter_async_context(at.Runtime())
            made: dict[str, Call] = {
                "bare": await stack.enter_async_context(bare_client(client, url, mode)),
                "bare-again": await stack.enter_async_context(bare_client(client, url, mode)),
            }

            async def layers(source: at.ToolSource) -> tuple[Call, Call]:
                """A toolkit over ``source`` and a session over it: each one's call of echo."""
                toolkit = at.assemble(
                    [at.Member(source, await source.discover())], lambda _, __: "allow"
                )
                session = await stack.enter_async_context(
                    at.Session(toolkit, approve=lambda _, __: False)
                )
                return (
                    functools.partial(toolkit.call, "bench__echo", INPUT),
                    functools.partial(session.call, "bench__echo", INPUT),
                )

            if {"source", "toolkit", "session"} & set(subjects):
                source = at.mcp.http(name="bench", url=url, client=client)
                await stack.enter_async_context(source.lifespan())
                made["source"] = functools.partial(source.call, "echo", INPUT)
                made["toolkit"], made["session"] = await layers(source)
            if {"actor", "session-actor"} & set(subjects):
                ref = await runtime.spawn(at.mcp.http(name="bench", url=url, client=client))
                made["actor"], made["session-actor"] = await layers(ref)
            chosen = [("bare", made["bare"])]
            chosen += [(label, made[label]) for label in subjects if label != "bare"]
            for _, call in chosen:
                await sample(call, max(concurrency, calls // 4), concurrency)
            if profile:
                for label, call in chosen:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    await turn(call, calls // concurrency, concurrency)
                    profiler.disable()
                    path = f"/tmp/client_cpu.{mode}.{label}.prof"
                    profiler.dump_stats(path)
                    print(f"{label}: {path}")
                return
            cpu: dict[str, list[float]] = {label: [] for label, _ in chosen}
            turns = max(1, calls // (BLOCK * concurrency))
            gc.collect()
            gc.freeze()
            try:
                for round_ in range(rounds):
                    spent = dict.fromkeys(cpu, 0.0)
                    gc.collect()
                    for index in range(turns):
                        # Rotated by the round too: at 512 callers a round is one turn, whose
                        # order would otherwise be the same every round.
                        shift = (round_ + index) % len(chosen)
                        for label, call in chosen[shift:] + chosen[:shift]:
                            started = time.process_time()
                            await turn(call, BLOCK, concurrency)
                            spent[label] += time.process_time() - started
                    for label, total in spent.items():
                        cpu[label].append(total / (turns * BLOCK * concurrency) * 1e6)
            finally:
                gc.unfreeze()
            figures = [f"bare {statistics.median(cpu['bare']):5.0f} µs"]
            for label, _ in chosen[1:]:
                ratios = [o / b for o, b in zip(cpu[label], cpu["bare"], strict=True)]
                figures.append(
                    f"{label} {statistics.median(ratios):.3f}x "
                    f"({min(ratios):.2f}-{max(ratios):.2f})"
                )
            print(f"{mode:9} c={concurrency:<3}  " + "  ".join(figures), flush=True)


async def turn(call: Call, each: int, concurrency: int) -> None:
    """``concurrency`` callers, each making ``each`` calls one after another."""

    async def caller() -> None:
        for _ in range(each):
            await call()

    if concurrency == 1:
        await caller()
        return
    async with anyio.create_task_group() as tasks:
        for _ in range(concurrency):
            tasks.start_soon(caller)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cpu")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400, help="calls of each subject a round")
    parser.add_argument("--mode", nargs="*", default=["stateless", "session"])
    parser.add_argument(
        "--subjects", nargs="*", choices=SUBJECTS, default=["source"], help="besides bare"
    )
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()
    for mode in arguments.mode:
        anyio.run(
            functools.partial(
                measure,
                mode,
                subjects=arguments.subjects,
                rounds=arguments.rounds,
                calls=arguments.calls,
                concurrency=arguments.concurrency,
                profile=arguments.profile,
            )
        )


if __name__ == "__main__":
    main()
