"""The toolkit's overhead: calls per second through ``Session -> Toolkit -> source``, the actor's
hop against the two floors of a request/reply between tasks, the memory of an idle session, and
the cost of assembling 10,000 tools, each as a ratio against a baseline measured in the same run.

Run: ``.venv/bin/python bench/bench_toolkit.py`` (a few seconds; not part of the tests).

Calls: one in-process source that answers its input. The baseline awaits ``source.call`` directly;
the subjects are ``toolkit.call`` (name lookup, schema check, error mapping), ``session.call``
(plus the session's cancel scope and approval check) and ``session.call`` over the source's
actor (``Runtime.spawn``: mailbox, actor loop, reply), each once one call after another and once
with 64 callers at a time: calls per second, and the process's CPU time per call (what a busy
machine disturbs least). Assembly: the baseline makes the ``<source>__<tool>`` strings of the same
definitions in a dict; the subject is ``at.assemble`` (names sanitized and cut, policy, entries,
clash check), at 10,000 and at 20,000 tools to show that it grows linearly, and the first call of
a tool (its validator compiled lazily).

The hop: ``toolkit.call`` routed through an actor, 64 callers, against the same 64 callers doing a
bare request/reply with 64 serving tasks over an anyio memory stream (an ``anyio.Event`` per reply)
and over an ``asyncio.Queue`` (an ``asyncio.Future`` per reply): calls per second as ratios to both
floors, medians of 3 runs side by side. The session: bytes ``tracemalloc`` sees for 2,000 tasks each
in an idle entered ``Session``, less 2,000 tasks that wait alone, per session.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence

import anyio

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}
INPUT: JsonObject = {"id": 7, "text": "hello"}


class Echo:
    """An in-process source that answers its input."""

    name = "bench"

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [at.ToolDefinition(name="echo", description="Echo.", input_schema=SCHEMA)]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return input


Call = Callable[[], Awaitable[object]]


async def rate(call: Call, calls: int, concurrency: int) -> float:
    """Calls per second: ``calls`` calls, ``concurrency`` at a time."""
    return (await measured(call, calls, concurrency))[0]


async def measured(call: Call, calls: int, concurrency: int) -> tuple[float, float]:
    """Calls per second, and the process's CPU time per call in microseconds (what a noisy
    machine disturbs least): ``calls`` calls, ``concurrency`` at a time."""
    each = calls // concurrency

    async def caller() -> None:
        for _ in range(each):
            await call()

    started, cpu = time.perf_counter(), time.process_time()
    if concurrency == 1:
        await caller()
    else:
        async with anyio.create_task_group() as tasks:
            for _ in range(concurrency):
                tasks.start_soon(caller)
    done = each * concurrency
    cpu_us = (time.process_time() - cpu) / done * 1e6
    return done / (time.perf_counter() - started), cpu_us


async def bench_calls(calls: int) -> None:
    source = Echo()
    toolkit = at.assemble([at.Member(source, await source.discover())], lambda _, __: "allow")
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=64)
        over_actor = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
        async with (
            at.Session(toolkit, approve=lambda _, __: True) as session,
            at.Session(over_actor, approve=lambda _, __: True) as actor_session,
        ):
            subjects: list[tuple[str, Call]] = [
                ("source.call (baseline)", lambda: source.call("echo", INPUT)),
                ("toolkit.call", lambda: toolkit.call("bench__echo", INPUT)),
                ("session.call", lambda: session.call("bench__echo", INPUT)),
                ("session.call over an actor", lambda: actor_session.call("bench__echo", INPUT)),
            ]
            for concurrency in (1, 64):
                print(f"\ncalls, {concurrency} caller(s) at a time, {calls} calls")
                baseline = 0.0
                for label, call in subjects:
                    await rate(call, calls // 10, concurrency)  # warm up
                    per_second, cpu_us = await measured(call, calls, concurrency)
                    baseline = baseline or per_second
                    print(
                        f"  {label:<30} {per_second:>12,.0f}/s   "
                        f"{baseline / per_second:>6.1f}x the baseline's time   "
                        f"{cpu_us:>6.1f} µs CPU a call"
                    )


async def anyio_floor(calls: int, callers: int) -> float:
    """Request/reply over an anyio memory stream: the floor of a hop in anyio's own terms."""
    send, receive = anyio.create_memory_object_stream[
        tuple[JsonObject, list[JsonObject], anyio.Event]
    ](256)

    async def serve() -> None:
        async for value, slot, done in receive:
            slot.append(value)
            done.set()

    async def call() -> None:
        slot: list[JsonObject] = []
        done = anyio.Event()
        await send.send((INPUT, slot, done))
        await done.wait()

    async with anyio.create_task_group() as servers:
        for _ in range(callers):
            servers.start_soon(serve)
        per_second = await rate(call, calls, callers)
        servers.cancel_scope.cancel()
    return per_second


async def asyncio_floor(calls: int, callers: int) -> float:
    """Request/reply over an ``asyncio.Queue`` with an ``asyncio.Future`` per reply."""
    queue: asyncio.Queue[tuple[JsonObject, asyncio.Future[JsonObject]]] = asyncio.Queue(256)
    loop = asyncio.get_running_loop()

    async def serve() -> None:
        while True:
            value, reply = await queue.get()
            reply.set_result(value)

    async def call() -> None:
        reply: asyncio.Future[JsonObject] = loop.create_future()
        await queue.put((INPUT, reply))
        await reply

    servers = [asyncio.ensure_future(serve()) for _ in range(callers)]
    per_second = await rate(call, calls, callers)
    for server in servers:
        server.cancel()
    await asyncio.gather(*servers, return_exceptions=True)
    return per_second


async def bench_hop(calls: int) -> None:
    callers = 64
    source = Echo()
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=callers)
        toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")

        async def routed() -> float:
            return await rate(lambda: toolkit.call("bench__echo", INPUT), calls, callers)

        runs: dict[str, list[float]] = {"anyio": [], "asyncio": [], "routed": []}
        await anyio_floor(calls, callers)  # warm up
        await asyncio_floor(calls, callers)
        await routed()
        for _ in range(3):
            runs["anyio"].append(await anyio_floor(calls, callers))
            runs["asyncio"].append(await asyncio_floor(calls, callers))
            runs["routed"].append(await routed())
    anyio_rate, asyncio_rate, routed_rate = (statistics.median(runs[k]) for k in runs)
    print(f"\nthe hop, {callers} callers, {calls} calls (medians of 3)")
    print(f"  anyio memory stream request/reply   {anyio_rate:>10,.0f}/s")
    print(f"  asyncio Queue + Future              {asyncio_rate:>10,.0f}/s")
    print(
        f"  toolkit.call through an actor       {routed_rate:>10,.0f}/s   "
        f"{routed_rate / anyio_rate:.2f}x the anyio floor, "
        f"{routed_rate / asyncio_rate:.2f}x the asyncio floor"
    )


async def bench_idle_sessions(count: int = 2_000) -> None:
    source = Echo()
    toolkit = at.assemble([at.Member(source, await source.discover())], lambda _, __: "allow")

    async def measure(enter: bool) -> int:
        release = anyio.Event()
        ready = 0

        async def hold() -> None:
            nonlocal ready
            if enter:
                async with at.Session(toolkit, approve=lambda _, __: True):
                    ready += 1
                    await release.wait()
            else:
                ready += 1
                await release.wait()

        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        async with anyio.create_task_group() as tasks:
            for _ in range(count):
                tasks.start_soon(hold)
            await anyio.wait_all_tasks_blocked()
            assert ready == count
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            release.set()
        tracemalloc.stop()
        return held

    await measure(True)  # warm up
    alone = statistics.median([await measure(False) for _ in range(3)])
    with_session = statistics.median([await measure(True) for _ in range(3)])
    print(f"\nan idle session: {(with_session - alone) / count:,.0f} bytes beyond its task")


def bench_assembly(sizes: Sequence[int]) -> None:
    print("\nassembly")
    source = Echo()
    for size in sizes:
        definitions = [
            at.ToolDefinition(name=f"tool.{i}", description=f"Tool {i}.", input_schema=SCHEMA)
            for i in range(size)
        ]
        member = at.Member(source, definitions)

        started = time.perf_counter()
        names = {f"{source.name}__{d.name}": d for d in definitions}
        baseline = time.perf_counter() - started
        assert len(names) == size

        best = float("inf")
        for _ in range(3):
            gc.collect()
            started = time.perf_counter()
            toolkit = at.assemble([member], lambda _, __: "allow")
            best = min(best, time.perf_counter() - started)
        assert len(toolkit) == size
        print(
            f"  {size:>6} tools: assemble {best * 1000:8.1f} ms, naming baseline "
            f"{baseline * 1000:6.1f} ms ({best / baseline:5.1f}x), "
            f"{best / size * 1e6:5.2f} us per tool"
        )

    started = time.perf_counter()
    anyio.run(toolkit.call, "bench__tool_0", INPUT)
    print(
        f"  first call of a tool (validator compiled): {(time.perf_counter() - started) * 1000:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=64_000)
    args = parser.parse_args()
    anyio.run(bench_calls, args.calls)
    anyio.run(bench_hop, args.calls)
    anyio.run(bench_idle_sessions)
    bench_assembly([10_000, 20_000])


if __name__ == "__main__":
    main()
