"""Many tenants in one process: N tenants registered in one ``at.Runtime``, each with its own
credentials on a thin client of one shared pool (``at.http.Connections``), one HTTP source
(``at.http.make``, against the HTTP bench server) and one MCP source (``at.mcp.http``, against
the official SDK's stateless bench server), both spawned with ``idle_timeout``; 1% of them active
at a time, the rest idle; at 10,000 and 100,000 tenants.

Each figure comes from a process of its own (``python -m bench.tenants ...``), so its peak memory
(the process's maximum resident set) is its own, run ``ROUNDS`` times: the figures are medians.

- *Memory* (traced by ``tracemalloc``, in a process of its own): the bytes per tenant of the
  host's own objects (its client, its two sources), then the bytes per tenant its two actors
  add, registered and idle (passivated: they start on their first call), against the same
  actors kept running (spawned without ``idle_timeout``: each incarnation entered, its workers
  and its MCP state loop waiting).
- *Resident memory* (untraced, in the process of the calls): the growth of the resident set
  per tenant as its host objects are built, then as its actors are registered; cruder than the
  traced bytes (the allocator keeps what it got), and the only memory figure at 100,000, where
  tracing every allocation would take most of an hour on the shared machine.
- *Registering* (untraced): the time to spawn one tenant's two actors, and to build its client
  and sources.
- *Calls*: the active 1% each call both sources once (warming them), are left idle for the
  idle timeout (their actors passivate), then each calls both sources once more (the *first
  call* after idleness: a passivated actor starts a new incarnation, and the MCP source finds
  the server's era again) and then ``CALLS`` more, one after another, every active tenant at
  once: calls/s and the 99th percentile of one call. Against the same tenants with every actor
  kept running (no idle timeout), in a process of its own.
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence

import anyio
import httpx2

import amends_toolkit as at
from bench._harness import Measure, percentile, server_process

SIZES = (10_000, 100_000)
ACTIVE = 0.01
"""The share of tenants active at a time."""
CALLS = 10
"""Calls each active tenant makes after its first, one after another (both sources in turn)."""
IDLE = 2.0
"""Seconds with nothing in flight before an actor passivates."""
ROUNDS = 3
WAIT = 300.0
"""Seconds a call may wait and take (its client's timeouts, its source's)."""
MODES = ("passivated", "kept running")

OPERATIONS = [
    at.http.Operation(
        definition=at.ToolDefinition(
            name="get_item",
            description="Get an item.",
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
]


def tenant(
    connections: at.http.Connections[httpx2.AsyncClient], index: int, http: int, mcp: int
) -> tuple[at.http.HttpSource, at.ToolSource]:
    """The host's objects for one tenant: its client (its own token) and its two sources."""
    client = connections.client(headers={"Authorization": f"Bearer tenant-{index:06d}-7c1e9a"})
    # 1% of 100,000 tenants is 2,000 calls at once over a pool of 1,024 connections, on a busy
    # machine: they wait for a connection longer than httpx's 5 seconds.
    client.timeout = httpx2.Timeout(WAIT)
    return (
        at.http.make(
            name="api",
            base_url=f"http://127.0.0.1:{http}",
            operations=OPERATIONS,
            client=client,
            timeout=WAIT,
        ),
        at.mcp.http(name="tasks", url=f"http://127.0.0.1:{mcp}/mcp", client=client, timeout=WAIT),
    )


def pool() -> at.http.Connections[httpx2.AsyncClient]:
    limits = httpx2.Limits(max_connections=1024, max_keepalive_connections=1024)
    return at.http.Connections(httpx2.AsyncHTTPTransport(limits=limits))


def idle_timeout(mode: str) -> float | None:
    return IDLE if mode == "passivated" else None


async def memory(size: int, mode: str) -> dict[str, float]:
    async with pool() as connections, at.Runtime() as runtime:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        hosts = [tenant(connections, index, 9, 9) for index in range(size)]
        gc.collect()
        built = tracemalloc.get_traced_memory()[0]
        refs = []
        for http, mcp in hosts:
            for source in (http, mcp):
                refs.append(await runtime.spawn(source, idle_timeout=idle_timeout(mode)))
        await anyio.wait_all_tasks_blocked()  # each incarnation entered, when kept running
        wanted = "passivated" if mode == "passivated" else "running"
        assert all(ref.statistics().state == wanted for ref in refs)
        gc.collect()
        registered = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return {
        "host_bytes_per_tenant": (built - before) / size,
        "actor_bytes_per_tenant": (registered - built) / size,
    }


def resident() -> int:
    """The bytes of the process's resident set now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


async def calls(size: int, mode: str, http: int, mcp: int) -> dict[str, float]:
    clock = time.perf_counter
    async with pool() as connections, at.Runtime() as runtime:
        gc.collect()
        before = resident()
        started = clock()
        hosts = [tenant(connections, index, http, mcp) for index in range(size)]
        build_ms = (clock() - started) / size * 1000
        gc.collect()
        built = resident()
        refs: list[tuple[at.ActorRef, at.ActorRef]] = []
        started = clock()
        for source, tasks in hosts:
            refs.append(
                (
                    await runtime.spawn(source, idle_timeout=idle_timeout(mode)),
                    await runtime.spawn(tasks, idle_timeout=idle_timeout(mode)),
                )
            )
        register_ms = (clock() - started) / size * 1000
        await anyio.wait_all_tasks_blocked()  # each incarnation entered, when kept running
        gc.collect()
        registered = resident()
        active = refs[: max(1, int(size * ACTIVE))]

        async def both(pair: tuple[at.ActorRef, at.ActorRef], times: list[float]) -> None:
            api, tasks = pair
            asked: list[tuple[at.ActorRef, str, at.JsonObject]] = [
                (api, "get_item", {"item_id": "1"}),
                (tasks, "echo", {"text": "hi"}),
            ]
            for ref, tool, input in asked:
                began = clock()
                await ref.call(tool, input)
                times.append(clock() - began)

        async def everyone(rounds: int, times: list[float]) -> float:
            async def one(pair: tuple[at.ActorRef, at.ActorRef]) -> None:
                for _ in range(rounds):
                    await both(pair, times)

            began = clock()
            async with anyio.create_task_group() as group:
                for pair in active:
                    group.start_soon(one, pair)
            return clock() - began

        await everyone(1, [])  # warmed: each actor has called its server once
        await anyio.sleep(IDLE * 1.5)
        if mode == "passivated":
            # The bench reads the statistics a host would (a busy machine may be late).
            while any(ref.statistics().state != "passivated" for pair in active for ref in pair):  # noqa: ASYNC110
                await anyio.sleep(0.1)
        first: list[float] = []
        await everyone(1, first)
        steady: list[float] = []
        took = await everyone(CALLS // 2, steady)
        passivations = sum(ref.statistics().passivations for pair in active for ref in pair)
    return {
        "host_resident_bytes_per_tenant": (built - before) / size,
        "actor_resident_bytes_per_tenant": (registered - built) / size,
        "build_ms_per_tenant": build_ms,
        "register_ms_per_tenant": register_ms,
        "first_p50_ms": statistics.median(first) * 1000,
        "first_p99_ms": percentile(first, 0.99) * 1000,
        "calls_per_second": len(steady) / took,
        "p50_ms": statistics.median(steady) * 1000,
        "p99_ms": percentile(steady, 0.99) * 1000,
        "passivations": passivations,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def child(*arguments: object) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.tenants", *map(str, arguments)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"bench.tenants {arguments} failed:\n{done.stderr[-3000:]}")
    line = done.stdout.splitlines()[-1]
    print("   ", *arguments, line, file=sys.stderr, flush=True)
    return dict(json.loads(line))


def medians(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


IDLE_BYTES = "bytes an idle tenant's two actors add (passivated)"
REGISTER = "time to register a tenant (spawn its two actors)"
TRACED_UP_TO = 10_000
"""The largest size whose memory is traced (``tracemalloc``) too."""


def run(*, sizes: Sequence[int] = SIZES, rounds: int = ROUNDS) -> list[Measure]:
    measures: list[Measure] = []
    with (
        server_process("_http_bench_server.py") as http,
        server_process("_mcp_bench_server.py") as mcp,
    ):
        for size in sizes:
            group = f"{size:,} tenants, {int(size * ACTIVE):,} active"
            print(f"  {group}", flush=True)
            held = {
                mode: medians([child("memory", size, mode) for _ in range(rounds)])
                for mode in MODES
                if size <= TRACED_UP_TO
            }
            made = {
                mode: medians(
                    [child("calls", size, mode, http.port, mcp.port) for _ in range(rounds)]
                )
                for mode in MODES
            }
            ours, kept = made["passivated"], made["kept running"]
            if held:
                measures += [
                    Measure(
                        group=group,
                        subject=f"{IDLE_BYTES}, traced",
                        value=held["passivated"]["actor_bytes_per_tenant"],
                        unit="bytes",
                        baseline="the same actors kept running",
                        baseline_value=held["kept running"]["actor_bytes_per_tenant"],
                    ),
                    Measure(
                        group=group,
                        subject="bytes of the host's own objects per tenant (client, two "
                        "sources), traced",
                        value=held["passivated"]["host_bytes_per_tenant"],
                        unit="bytes",
                    ),
                ]
            # (subject, figure, unit, what it is measured against: None for a figure of its own)
            rows: tuple[tuple[str, str, str, str | None], ...] = (
                (
                    "resident bytes an idle tenant's two actors add (passivated)",
                    "actor_resident_bytes_per_tenant",
                    "bytes",
                    "the same actors kept running",
                ),
                (
                    "resident bytes of the host's own objects per tenant",
                    "host_resident_bytes_per_tenant",
                    "bytes",
                    None,
                ),
                (REGISTER, "register_ms_per_tenant", "ms", "kept running"),
                (
                    "time to build a tenant's client and two sources",
                    "build_ms_per_tenant",
                    "ms",
                    None,
                ),
                (
                    "first call after idleness, p50 (a passivated actor starts again)",
                    "first_p50_ms",
                    "ms",
                    "kept running (a warm actor)",
                ),
                (
                    "first call after idleness, p99",
                    "first_p99_ms",
                    "ms",
                    "kept running (a warm actor)",
                ),
                ("calls/s of the active tenants", "calls_per_second", "calls/s", "kept running"),
                ("p99 of one call of an active tenant", "p99_ms", "ms", "kept running"),
                ("peak memory of the process", "peak_mib", "MiB", "kept running"),
            )
            measures += [
                Measure(group=group, subject=subject, value=ours[key], unit=unit)
                if against is None
                else Measure(
                    group=group,
                    subject=subject,
                    value=ours[key],
                    unit=unit,
                    baseline=against,
                    baseline_value=kept[key],
                )
                for subject, key, unit, against in rows
            ]
    return measures


def section(measures: Sequence[Measure], rounds: int) -> str:
    """The figures as the markdown of ``bench/RESULTS.md``'s section."""
    lines = [f"Medians of {rounds} runs, each in a process of its own.", ""]
    group = None
    for measure in measures:
        if measure.group != group:
            group = measure.group
            lines += [
                "",
                f"## {group}",
                "",
                "| subject | value | baseline | baseline value | ratio |",
                "| --- | ---: | --- | ---: | ---: |",
            ]
        ratio = measure.ratio
        baseline = f"{measure.baseline_value:,.2f} {measure.unit}" if measure.baseline else "—"
        lines.append(
            f"| {measure.subject} | {measure.value:,.2f} {measure.unit} | "
            f"{measure.baseline or '—'} | {baseline} | "
            f"{'—' if ratio is None else f'{ratio:.2f}x'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    if sys.argv[1:2] not in (["memory"], ["calls"]):
        # python -m bench.tenants [SIZE ...] [--rounds N]: the section, printed
        words = sys.argv[1:]
        rounds = ROUNDS
        if "--rounds" in words:
            at_ = words.index("--rounds")
            rounds = int(words[at_ + 1])
            del words[at_ : at_ + 2]
        sizes = tuple(int(word) for word in words) or SIZES
        print(section(run(sizes=sizes, rounds=rounds), rounds))
        return
    what, size, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if what == "memory":
        figures = anyio.run(memory, size, mode)
    else:
        figures = anyio.run(calls, size, mode, int(sys.argv[4]), int(sys.argv[5]))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
