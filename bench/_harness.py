"""What every benchmark of ``python -m bench`` shares: how a subject is driven and measured, the
servers it runs in other processes, and the figures it reports.

A *sample* is one subject driven for a bounded number of calls at a fixed concurrency: calls per
second, the 50th and 99th percentile of one call's time, and the process's CPU time per call
(servers run in other processes, so this is the client's own cost); and, where the server's
process is known, the share of one core the server was busy during the subject's turns (near
100%, the server's one loop, not the client, sets the calls per second). A *figure* is the
median of several rounds of samples, each round measuring the subjects in turns (a slice of the
round's calls each, so that a subject and its baseline run interleaved), and its ratio to that
baseline is the median of the rounds' ratios: on a noisy 2-core machine, only ratios measured
side by side mean anything.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import anyio
import attrs
import httpx2

Call = Callable[[], Awaitable[object]]
HERE = Path(__file__).resolve().parent


class _Limits(Protocol):
    def __init__(
        self, *, max_connections: int, max_keepalive_connections: int, keepalive_expiry: float
    ) -> None: ...


_L = TypeVar("_L", bound=_Limits)

POOL = 64
"""The connections of a client its callers share, as a host would hold one."""
KEEP_ALIVE = 120.0
"""How long a client keeps an idle connection: as long as the bench's servers do (uvicorn's
``timeout_keep_alive``). With httpx's default of 5 s, the first subject over a client after
the long turns of other clients (the SDK's, fastmcp's) found every connection expired and paid
for closing and opening them all (rounds of 1.4-1.5x), while a subject after one over the same
client never did: which subject paid depended on its place in the turn."""


HTTPX_KEEP_ALIVE = 5.0
"""httpx 0.28's own default, which its clients keep: its pool (httpcore 1) collapses when its
connections are kept longer (a raw GET at 64 callers, 52 calls/s against 405)."""


def pool_limits(limits: type[_L], concurrency: int) -> _L:
    """A client's pool (``httpx.Limits`` or ``httpx2.Limits``) for ``concurrency`` callers: at
    most :data:`POOL` connections, kept :data:`KEEP_ALIVE` between turns (``httpx2``; httpx
    0.28's :data:`HTTPX_KEEP_ALIVE`)."""
    connections = min(concurrency, POOL)
    return limits(
        max_connections=connections,
        max_keepalive_connections=connections,
        keepalive_expiry=KEEP_ALIVE if limits is httpx2.Limits else HTTPX_KEEP_ALIVE,
    )


@attrs.frozen(kw_only=True)
class Sample:
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_call: float
    server_cpu_share: float | None = None
    """The server process's CPU time over the wall time of the turns (1.0: one core all along),
    or ``None`` where it was not measured."""


@attrs.frozen(kw_only=True)
class Figure:
    """One line of the report: a subject's median figures and its ratios to the baseline."""

    group: str
    subject: str
    baseline: str
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_call: float
    throughput_ratio: float
    """The subject's calls per second over the baseline's (higher is better)."""
    cpu_ratio: float
    """The subject's CPU per call over the baseline's (lower is better)."""
    server_cpu_share: float | None = None
    """The median of the rounds' :attr:`Sample.server_cpu_share`."""
    rounds: tuple[Sample, ...] = ()
    """Each round's sample, in order: what pairs this subject with any other of its group."""

    @property
    def client_cpu_share(self) -> float:
        """The median over the rounds of the client process's CPU time over the wall time of
        its turns (1.0: one core all along; then its calls per second are one over its CPU)."""
        if not self.rounds:
            return self.calls_per_second * self.cpu_us_per_call / 1e6
        return statistics.median(s.calls_per_second * s.cpu_us_per_call / 1e6 for s in self.rounds)

    def throughput_against(self, other: Figure) -> float:
        """The median over the rounds of this subject's calls per second over ``other``'s in the
        same round (measured side by side, unlike the ratio of the two medians)."""
        return statistics.median(
            mine.calls_per_second / theirs.calls_per_second
            for mine, theirs in zip(self.rounds, other.rounds, strict=True)
        )

    def server_cpu_against(self, other: Figure) -> float | None:
        """The median over the rounds of the server's CPU time per call in this subject's turns
        over ``other``'s in the same round, or ``None`` where it was not measured."""
        if not self.rounds or not other.rounds:
            return None
        ratios = []
        for mine, theirs in zip(self.rounds, other.rounds, strict=True):
            if not mine.server_cpu_share or not theirs.server_cpu_share:
                return None
            ratios.append(
                mine.server_cpu_share
                / mine.calls_per_second
                / (theirs.server_cpu_share / theirs.calls_per_second)
            )
        return statistics.median(ratios)


@attrs.frozen(kw_only=True)
class Measure:
    """A figure that is not a call rate: a time, a size, with its baseline and their ratio."""

    group: str
    subject: str
    value: float
    unit: str
    baseline: str = ""
    baseline_value: float = 0.0

    @property
    def ratio(self) -> float | None:
        return self.value / self.baseline_value if self.baseline_value else None


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def sample(call: Call, calls: int, concurrency: int) -> Sample:
    """Drive ``call`` ``calls`` times, ``concurrency`` callers at a time, and measure it."""
    return _summary([await _drive(call, calls, concurrency)])


ServerClock = Callable[[], float]
"""The CPU seconds a server's process has spent so far."""


@attrs.frozen(kw_only=True)
class _Run:
    times: list[float]
    wall: float
    cpu: float
    server_cpu: float | None = None


async def _drive(
    call: Call, calls: int, concurrency: int, server: ServerClock | None = None
) -> _Run:
    each = max(1, calls // concurrency)
    times: list[float] = []
    clock = time.perf_counter

    async def caller() -> None:
        for _ in range(each):
            started = clock()
            await call()
            times.append(clock() - started)

    gc.collect()
    # the server's clock is read outside the client's own window: its cost is not the client's
    served = None if server is None else server()
    cpu, wall = time.process_time(), clock()
    if concurrency == 1:
        await caller()
    else:
        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(caller)
    wall, cpu = clock() - wall, time.process_time() - cpu
    server_cpu = None if server is None or served is None else server() - served
    return _Run(times=times, wall=wall, cpu=cpu, server_cpu=server_cpu)


def _summary(runs: Sequence[_Run]) -> Sample:
    times = [t for run in runs for t in run.times]
    wall = sum(run.wall for run in runs)
    served = [run.server_cpu for run in runs]
    return Sample(
        calls_per_second=len(times) / wall,
        p50_ms=percentile(times, 0.5) * 1000,
        p99_ms=percentile(times, 0.99) * 1000,
        cpu_us_per_call=sum(run.cpu for run in runs) / len(times) * 1e6,
        server_cpu_share=None if None in served else sum(filter(None, served)) / wall,
    )


SLICES = 10
"""Into how many turns a round at many callers is cut when it is long enough (each at least
:data:`SLICE_CALLS` calls a caller)."""
SLICE_CALLS = 10
"""The fewest calls a caller makes in one turn at many callers: each turn there begins and ends
with a ramp (callers starting, the last ones finishing alone), which a long turn dilutes."""
ONE_CALLER_SLICE = 4
"""The calls of one turn at one caller, which has no ramp: the shorter the turns, the more evenly
a shared machine's load, which drifts within tens of milliseconds, falls on every subject. Turns
of 4 calls (5-10 ms here) instead of 24 narrowed the spread of a round's ratio at one caller in
9 of 10 measured cases, by 12-53% (bench/NOTES.md, "This session (2026-12-02)")."""


def slices_of(calls: int, concurrency: int) -> int:
    """Into how many turns a round of ``calls`` calls at ``concurrency`` callers is cut."""
    if concurrency == 1:
        return max(1, calls // ONE_CALLER_SLICE)
    return max(1, min(SLICES, calls // (concurrency * SLICE_CALLS)))


WARM_CALLERS = 64
"""Callers that warm a subject up: enough to open a pool of 64 connections."""


async def compare(
    group: str,
    subjects: Sequence[tuple[str, Call, str]],
    *,
    calls: int,
    concurrency: int,
    rounds: int,
    server: ServerClock | None = None,
) -> list[Figure]:
    """Measure each subject in turn, round after round, each ratio against the subject named
    third (a baseline, itself measured in the same rounds); ``""`` marks a baseline.

    Within a round the subjects take turns in slices (:func:`slices_of`: at one caller, of
    :data:`ONE_CALLER_SLICE` calls; at many callers, a slice is the round at the bench's counts),
    their order reversed every other slice (counted across rounds, so that rounds of one slice
    alternate too), so that a subject and its baseline see the same machine: a shared machine's
    load drifts within seconds. The
    objects alive before the rounds are frozen out of garbage collection while they run, so
    a subject pays for collecting what it makes, not for walking the whole process's heap.
    ``server`` reads the CPU time of the server the subjects call (:meth:`Server.cpu_clock`):
    each figure then tells how busy it was during the subject's turns.
    """
    samples: dict[str, list[Sample]] = {label: [] for label, _, _ in subjects}
    for _, call, _ in subjects:  # warm every subject up once: connections, caches, validators
        warm = min(concurrency, WARM_CALLERS)
        await sample(call, max(warm, calls // 10), warm)
    slices = slices_of(calls, concurrency)
    # What is alive now (modules, clients, servers' state) is no one's garbage: frozen, it is
    # not walked by each slice's collection nor by one that falls within a subject's calls.
    gc.collect()
    gc.freeze()
    try:
        for round_index in range(rounds):
            runs: dict[str, list[_Run]] = {label: [] for label, _, _ in subjects}
            for index in range(slices):
                # Reversed every other turn, counted across rounds: a round of one slice (many
                # callers) would otherwise run its subjects in the same order every round.
                turn = round_index * slices + index
                for label, call, _ in subjects if turn % 2 == 0 else subjects[::-1]:
                    runs[label].append(await _drive(call, calls // slices, concurrency, server))
            for label, measured in runs.items():
                samples[label].append(_summary(measured))
    finally:
        gc.unfreeze()
    figures = []
    for label, _, baseline in subjects:
        baseline = baseline or label
        mine, base = samples[label], samples[baseline]
        figures.append(
            Figure(
                group=group,
                subject=label,
                baseline=baseline,
                calls_per_second=statistics.median(s.calls_per_second for s in mine),
                p50_ms=statistics.median(s.p50_ms for s in mine),
                p99_ms=statistics.median(s.p99_ms for s in mine),
                cpu_us_per_call=statistics.median(s.cpu_us_per_call for s in mine),
                server_cpu_share=None
                if server is None
                else statistics.median(s.server_cpu_share or 0.0 for s in mine),
                throughput_ratio=statistics.median(
                    m.calls_per_second / b.calls_per_second for m, b in zip(mine, base, strict=True)
                ),
                cpu_ratio=statistics.median(
                    m.cpu_us_per_call / b.cpu_us_per_call for m, b in zip(mine, base, strict=True)
                ),
                rounds=tuple(mine),
            )
        )
    return figures


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running(
    command: Sequence[str],
    *,
    ready: Callable[[], bool],
    what: str,
    env: dict[str, str],
    quiet: bool = False,
    start_within: float = 60.0,
) -> Iterator[int]:
    """Run ``command`` until the block ends, once ``ready()`` says it serves; stop it after.
    ``quiet`` drops what it writes to stderr (a gateway's log lines). Yields its process id."""
    process = subprocess.Popen(list(command), env=env, stderr=subprocess.DEVNULL if quiet else None)
    try:
        deadline = time.monotonic() + start_within
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{what} did not start")
            time.sleep(0.05)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def listens(port: int) -> bool:
    """Whether something accepts connections on the loopback ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@attrs.frozen
class Server:
    """A bench server in its own process: the loopback port it listens on, and its process."""

    port: int
    pid: int

    def cpu_clock(self) -> ServerClock | None:
        """A reader of the CPU seconds the server's process has spent so far (all its threads,
        to the nanosecond: the process's POSIX CPU clock), or ``None`` where the platform
        gives no such clock of another process."""
        clock = ctypes.c_int()
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.clock_getcpuclockid(self.pid, ctypes.byref(clock)) != 0:
                return None
        except (AttributeError, OSError):
            return None
        return functools.partial(time.clock_gettime, clock.value)


@contextlib.contextmanager
def server_process(script: str, *arguments: str) -> Iterator[Server]:
    """Run ``bench/<script>`` in its own Python process on a free loopback port; yield it."""
    port = free_port()
    with running(
        [sys.executable, str(HERE / script), str(port), *arguments],
        ready=lambda: listens(port),
        what=f"the bench server {script}",
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as pid:
        yield Server(port=port, pid=pid)


def best_of(function: Callable[[], object], times: int = 3) -> float:
    """The shortest of ``times`` runs of ``function``, in seconds (garbage collected before each)."""
    best = float("inf")
    for _ in range(times):
        gc.collect()
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best
