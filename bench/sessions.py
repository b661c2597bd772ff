"""Many sessions in one process: N concurrent ``at.Session`` over one toolkit of 1,000 tools on 4
actors (in-process sources that answer their input, so the runtime is what is measured), each
session making calls; at 1,000, 10,000 and 100,000 sessions.

Each size runs in its own process (``python -m bench.sessions N CALLS``), so its peak memory
(the process's maximum resident set) is its own. Figures: calls per second and the 99th
percentile of one call's time through ``Session -> Toolkit -> actor``, against the floor of the
same tasks awaiting the source directly; the peak memory; and the bytes an idle session holds
beyond the task that holds it: N tasks each inside an open session, against N tasks each inside
a bare cancel scope (both waiting on one event), as traced by ``tracemalloc``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence

import anyio
import anyio.lowlevel

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from bench._harness import Measure, percentile

SCHEMA: JsonObject = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
SOURCES, TOOLS = 4, 1_000
SIZES = (1_000, 10_000, 100_000)


class Echo:
    """An in-process source of ``TOOLS // SOURCES`` tools that answers its input."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [
            at.ToolDefinition(name=f"tool_{i}", description=f"Tool {i}.", input_schema=SCHEMA)
            for i in range(TOOLS // SOURCES)
        ]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return input


async def calls(sessions: int, each: int) -> dict[str, float]:
    sources = [Echo(f"s{i}") for i in range(SOURCES)]
    async with at.Runtime() as runtime:
        refs = [await runtime.spawn(source, max_concurrency=64) for source in sources]
        toolkit = at.assemble(
            [at.Member(ref, await ref.discover()) for ref in refs], lambda _, __: "allow"
        )
        names = list(toolkit.tools)

        async def run(subject: str) -> tuple[float, float]:
            times: list[float] = []
            clock = time.perf_counter

            async def session_task(index: int) -> None:
                name = names[index % len(names)]
                source, tool = sources[index % SOURCES], f"tool_{index % (TOOLS // SOURCES)}"
                if subject == "direct":
                    for n in range(each):
                        started = clock()
                        await source.call(tool, {"n": n})
                        times.append(clock() - started)
                    return
                async with at.Session(toolkit, approve=lambda _, __: False) as session:
                    for n in range(each):
                        started = clock()
                        await session.call(name, {"n": n})
                        times.append(clock() - started)

            started = clock()
            async with anyio.create_task_group() as group:
                for index in range(sessions):
                    group.start_soon(session_task, index)
            return len(times) / (clock() - started), percentile(times, 0.99) * 1000

        floor, floor_p99 = await run("direct")
        rate, p99 = await run("session")
    return {
        "floor_calls_per_second": floor,
        "floor_p99_ms": floor_p99,
        "calls_per_second": rate,
        "p99_ms": p99,
    }


async def idle_bytes(sessions: int) -> dict[str, float]:
    toolkit = at.assemble([at.Member(Echo("s"), await Echo("s").discover())], lambda _, __: "allow")
    results = {}
    for subject in ("cancel scope", "session"):
        release = anyio.Event()
        ready = anyio.Semaphore(0)

        async def hold(subject: str, release: anyio.Event, ready: anyio.Semaphore) -> None:
            if subject == "session":
                async with at.Session(toolkit, approve=lambda _, __: False):
                    ready.release()
                    await release.wait()
            else:
                with anyio.CancelScope():
                    ready.release()
                    await release.wait()

        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        async with anyio.create_task_group() as group:
            for _ in range(sessions):
                group.start_soon(hold, subject, release, ready)
            for _ in range(sessions):
                await ready.acquire()
            results[subject] = (tracemalloc.get_traced_memory()[0] - before) / sessions
            release.set()
        tracemalloc.stop()
    return {
        "bytes_per_task_with_cancel_scope": results["cancel scope"],
        "bytes_per_session_beyond_task": results["session"] - results["cancel scope"],
    }


def measure_in_child(sessions: int, each: int) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-m", "bench.sessions", str(sessions), str(each)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(output.splitlines()[-1]))


def run(*, scale: float) -> list[Measure]:
    measures: list[Measure] = []
    for size in SIZES:
        print(f"  {size:,} sessions", flush=True)
        each = max(1, int(10 * scale)) if size < 100_000 else 1
        figures = measure_in_child(size, each)
        group = f"{size:,} concurrent sessions, {each} call(s) each"
        measures += [
            Measure(
                group=group,
                subject="calls/s through Session→Toolkit→actor",
                value=figures["calls_per_second"],
                unit="calls/s",
                baseline="the same tasks awaiting the source directly",
                baseline_value=figures["floor_calls_per_second"],
            ),
            Measure(
                group=group,
                # No ratio: a direct await of an in-process source never yields, so its p99 is
                # a few microseconds and says nothing of waiting.
                subject="p99 of one call",
                value=figures["p99_ms"],
                unit="ms",
            ),
            Measure(
                group=group,
                subject="peak memory of the process",
                value=figures["peak_mib"],
                unit="MiB",
            ),
        ]
    figures = measure_in_child(-10_000, 0)
    measures.append(
        Measure(
            group="an idle session (10,000 held)",
            subject="bytes beyond the task that holds it",
            value=figures["bytes_per_session_beyond_task"],
            unit="bytes",
            baseline="a bare task with a cancel scope",
            baseline_value=figures["bytes_per_task_with_cancel_scope"],
        )
    )
    return measures


def main() -> None:
    sessions, each = int(sys.argv[1]), int(sys.argv[2])
    if sessions < 0:
        figures = anyio.run(idle_bytes, -sessions)
    else:
        figures = anyio.run(calls, sessions, each)
        figures["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
