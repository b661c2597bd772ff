"""The bench's harness: subjects measured side by side take turns fairly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import httpx2
import pytest
from bench._harness import (
    HERE,
    HTTPX_KEEP_ALIVE,
    KEEP_ALIVE,
    POOL,
    Figure,
    Sample,
    compare,
    pool_limits,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_rounds_of_one_slice_alternate_which_subject_goes_first(concurrency: int) -> None:
    calls: list[str] = []

    def subject(label: str) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            calls.append(label)

        return call

    per_turn = 10 * concurrency  # too few calls for more than one slice a round
    await compare(
        "g",
        [("a", subject("a"), ""), ("b", subject("b"), "a")],
        calls=per_turn,
        concurrency=concurrency,
        rounds=4,
    )
    measured = calls[2 * max(concurrency, per_turn // 10) :]  # after each subject's warm-up
    turns = [measured[i : i + per_turn] for i in range(0, len(measured), per_turn)]
    assert [set(turn) for turn in turns] == [{"a"}, {"b"}, {"b"}, {"a"}] * 2
    assert [turn[0] for turn in turns[::2]] == ["a", "b", "a", "b"]


def test_a_throughput_against_another_subject_pairs_their_rounds() -> None:
    def figure(*rates: float) -> Figure:
        samples = tuple(
            Sample(calls_per_second=rate, p50_ms=1.0, p99_ms=1.0, cpu_us_per_call=1.0)
            for rate in rates
        )
        return Figure(
            group="g",
            subject="s",
            baseline="s",
            calls_per_second=sorted(rates)[1],
            p50_ms=1.0,
            p99_ms=1.0,
            cpu_us_per_call=1.0,
            throughput_ratio=1.0,
            cpu_ratio=1.0,
            rounds=samples,
        )

    # round by round the first does 2x, 2x and 0.5x the second: the median of the ratios is 2x,
    # where the ratio of the medians (200 against 200) would say 1x
    ours, theirs = figure(200, 800, 100), figure(100, 400, 200)
    assert ours.throughput_against(theirs) == 2.0


@pytest.mark.parametrize(
    ("kind", "kept"), [(httpx.Limits, HTTPX_KEEP_ALIVE), (httpx2.Limits, KEEP_ALIVE)]
)
def test_an_httpx2_pool_keeps_its_connections_between_turns_as_long_as_the_servers(
    kind: type[httpx.Limits | httpx2.Limits], kept: float
) -> None:
    # Kept shorter than the servers keep them, the first subject over a client after other
    # clients' long turns pays for reopening every connection, one after the same client never.
    limits = pool_limits(kind, 512)
    assert (limits.max_connections, limits.max_keepalive_connections) == (POOL, POOL)
    assert limits.keepalive_expiry == kept
    for server in ("_raw_mcp_server.py", "_mcp_bench_server.py", "_http_bench_server.py"):
        assert f"timeout_keep_alive={KEEP_ALIVE:g}," in (HERE / server).read_text()
    assert pool_limits(kind, 1).max_connections == 1
