"""The bench's harness, its pure helpers only: subjects measured side by side take turns fairly,
figures pair their rounds, the report reads them. Nothing here runs a benchmark or starts a
server: the bench checks its own figures as it runs (``bench.mcp_client.checked``)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
import httpx2
import pytest
from bench._harness import (
    HERE,
    HTTPX_KEEP_ALIVE,
    KEEP_ALIVE,
    ONE_CALLER_SLICE,
    POOL,
    SLICE_CALLS,
    SLICES,
    Figure,
    Sample,
    Server,
    compare,
    pool_limits,
    slices_of,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("concurrency", [2, 4])
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


@pytest.mark.both_backends
async def test_at_one_caller_subjects_take_short_turns_in_alternating_order() -> None:
    # No ramp at one caller: a round is cut into turns of ONE_CALLER_SLICE calls, each pair of
    # turns in the other order, so the machine's drift falls evenly on every subject.
    calls: list[str] = []

    def subject(label: str) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            calls.append(label)

        return call

    turns_a_round = 3
    await compare(
        "g",
        [("a", subject("a"), ""), ("b", subject("b"), "a")],
        calls=turns_a_round * ONE_CALLER_SLICE,
        concurrency=1,
        rounds=2,
    )
    warm = turns_a_round * ONE_CALLER_SLICE // 10
    measured = calls[2 * max(1, warm) :]
    assert len(measured) == 2 * 2 * turns_a_round * ONE_CALLER_SLICE
    turns = [measured[i : i + ONE_CALLER_SLICE] for i in range(0, len(measured), ONE_CALLER_SLICE)]
    assert [turn[0] for turn in turns] == ["a", "b", "b", "a"] * 3
    assert all(len(set(turn)) == 1 for turn in turns)


def test_only_one_caller_is_cut_into_short_turns() -> None:
    assert slices_of(520, 1) == 520 // ONE_CALLER_SLICE
    assert slices_of(2, 1) == 1
    # at many callers a turn holds at least SLICE_CALLS calls a caller, and a round at most
    # SLICES turns: the bench's counts make a round one turn there
    assert slices_of(640, 64) == 1
    assert slices_of(1_228, 512) == 1
    assert slices_of(64 * SLICE_CALLS * 3, 64) == 3
    assert slices_of(10**6, 4) == SLICES


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


def test_the_servers_cpu_per_call_against_another_subject_pairs_their_rounds() -> None:
    def figure(*rounds: tuple[float, float | None]) -> Figure:
        return Figure(
            group="g",
            subject="s",
            baseline="s",
            calls_per_second=1.0,
            p50_ms=1.0,
            p99_ms=1.0,
            cpu_us_per_call=1.0,
            throughput_ratio=1.0,
            cpu_ratio=1.0,
            rounds=tuple(
                Sample(
                    calls_per_second=rate,
                    p50_ms=1.0,
                    p99_ms=1.0,
                    cpu_us_per_call=1.0,
                    server_cpu_share=share,
                )
                for rate, share in rounds
            ),
        )

    # CPU per call is the share over the rate: 1 ms, 1 ms, 4 ms against 2 ms, 0.5 ms, 1 ms a
    # call; round by round 0.5x, 2x and 4x: the median is 2x
    ours = figure((500, 0.5), (1_000, 1.0), (250, 1.0))
    theirs = figure((250, 0.5), (1_000, 0.5), (1_000, 1.0))
    assert ours.server_cpu_against(theirs) == pytest.approx(2.0)
    assert ours.server_cpu_against(figure((1, None), (1, 1.0), (1, 1.0))) is None


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


@pytest.mark.both_backends
@pytest.mark.parametrize("concurrency", [1, 4])
async def test_a_figure_tells_the_server_cpu_of_its_own_turns_only(concurrency: int) -> None:
    # A server whose clock moves a millisecond a call of "a" and nothing for "b": each round's
    # share of a core over its calls per second is the server's CPU per call in that subject's
    # turns, warm-ups and the other subject's turns left out.
    spent = [0.0]

    async def a() -> None:
        spent[0] += 0.001

    async def b() -> None:
        pass

    figures = await compare(
        "g",
        [("a", a, ""), ("b", b, "a")],
        calls=40 * concurrency,
        concurrency=concurrency,
        rounds=3,
        server=lambda: spent[0],
    )
    mine, other = figures
    for sample in mine.rounds:
        assert sample.server_cpu_share is not None
        assert sample.server_cpu_share / sample.calls_per_second == pytest.approx(0.001)
    assert [sample.server_cpu_share for sample in other.rounds] == [0.0] * 3
    assert mine.server_cpu_share == statistics.median(s.server_cpu_share or 0 for s in mine.rounds)


async def test_without_a_server_clock_a_figure_tells_no_server_share() -> None:
    async def call() -> None:
        pass

    (figure,) = await compare("g", [("a", call, "")], calls=10, concurrency=1, rounds=1)
    assert figure.server_cpu_share is None
    assert figure.rounds[0].server_cpu_share is None


@pytest.mark.skipif(sys.platform != "linux", reason="a POSIX CPU clock of another process")
def test_a_server_clock_reads_the_cpu_time_of_the_servers_process() -> None:
    # This process as the server: its clock moves with the CPU it spends (a spin) and not with
    # the time it waits (a sleep, which a wall clock would count).
    clock = Server(port=0, pid=os.getpid()).cpu_clock()
    assert clock is not None
    before, mine = clock(), time.process_time()
    while time.process_time() - mine < 0.05:
        pass
    time.sleep(0.05)
    spent, mine = clock() - before, time.process_time() - mine
    assert spent == pytest.approx(mine, abs=0.01)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert Server(port=0, pid=int(gone.stdout)).cpu_clock() is None


def test_the_report_tells_how_busy_the_client_and_the_server_were() -> None:
    from bench.__main__ import report, targets
    from bench.mcp_client import OURS, SDK

    def figure(subject: str, baseline: str, rate: float, cpu_us: float, server: float) -> Figure:
        samples = tuple(
            Sample(
                calls_per_second=rate,
                p50_ms=1.0,
                p99_ms=1.0,
                cpu_us_per_call=cpu_us,
                server_cpu_share=server,
            )
            for _ in range(3)
        )
        return Figure(
            group="g",
            subject=subject,
            baseline=baseline,
            calls_per_second=rate,
            p50_ms=1.0,
            p99_ms=1.0,
            cpu_us_per_call=cpu_us,
            throughput_ratio=1.0,
            cpu_ratio=1.0,
            server_cpu_share=server,
            rounds=samples,
        )

    # 500 calls/s at 2,000 µs of CPU each: the client's process spent a whole core
    figures = [
        figure("bare JSON-RPC, httpx2", "bare JSON-RPC, httpx2", 400, 2_500, 0.2),
        figure(OURS, "bare JSON-RPC, httpx2", 500, 2_000, 0.27),
        figure(SDK, "bare JSON-RPC, httpx2", 250, 2_000, 0.14),
    ]
    assert figures[1].client_cpu_share == pytest.approx(1.0)
    (row,) = [row for row in targets(figures, []) if "calls/s" in row[0]]
    assert row[1] == "2.00x (the bare client: 1.60x; busy in ours' turns: client 100%, server 27%)"
    info = {"date": "d", "cores": 2, "python": "3", "platform": "p", "seconds": 1}
    info |= {"suites": {"mcp": 1}, "packages": {}}
    lines = report(info, figures, [], 3, 0.4).splitlines()
    assert "| client 100%, server 27% |" in next(
        line for line in lines if line.startswith(f"| {OURS} |")
    )


def test_every_bench_server_names_uvicorns_parser_and_loop() -> None:
    # With httptools and uvloop installed, uvicorn's `auto` picks them: the servers' cost would
    # change with the machine's packages, not with anything the bench says.
    for server in ("_raw_mcp_server.py", "_mcp_bench_server.py", "_http_bench_server.py"):
        text = (HERE / server).read_text()
        assert 'http="h11",' in text
        assert 'loop="asyncio",' in text


@pytest.mark.parametrize(("calls", "concurrency"), [(30, 1), (7, 1), (192, 64), (307, 512), (1_536, 512)])  # fmt: skip
async def test_the_oauth_bench_mints_one_token_for_each_call_of_its_first_seen_subject(
    calls: int, concurrency: int
) -> None:
    # Each call of the first-seen subject takes a token of its own: too few and the bench stops,
    # too many and the count is not what the harness makes.
    from bench.gateway import calls_made, first_seen

    tokens = [str(number) for number in range(calls_made(calls, concurrency, rounds=3))]
    token = first_seen(tokens)
    used: list[str] = []

    async def call() -> None:
        used.append(token())

    await compare("g", [("a", call, "")], calls=calls, concurrency=concurrency, rounds=3)
    assert used == tokens
    with pytest.raises(SystemExit, match="too few tokens"):
        token()


def test_the_oauth_benchs_tokens_are_distinct_and_verify_with_the_key_its_issuer_serves() -> None:
    # A first-seen token the gateway had seen already would be a remembered one.
    import json

    import jwt
    from bench.gateway import SCOPE, Issuer

    issuer = Issuer()
    tokens = issuer.tokens(3, issuer="http://127.0.0.1:1", audience="http://127.0.0.1:2/mcp")
    assert len(set(tokens)) == 3
    key = jwt.PyJWK(json.loads(issuer.jwk()))
    for token in tokens:
        claims = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience="http://127.0.0.1:2/mcp",
            issuer="http://127.0.0.1:1",
        )
        assert claims["scope"] == SCOPE


def test_the_mcp_bench_refuses_figures_that_measure_something_else() -> None:
    from bench.mcp_client import AGAIN, OURS, checked

    def figure(subject: str, baseline: str, server: float | None) -> Figure:
        sample = Sample(calls_per_second=1.0, p50_ms=1.0, p99_ms=1.0, cpu_us_per_call=1.0)
        return Figure(
            group="g",
            subject=subject,
            baseline=baseline,
            calls_per_second=1.0,
            p50_ms=1.0,
            p99_ms=1.0,
            cpu_us_per_call=1.0,
            throughput_ratio=1.0,
            cpu_ratio=1.0,
            server_cpu_share=server,
            rounds=(sample,),
        )

    bare = "bare JSON-RPC, httpx2"
    good = [figure(AGAIN, bare, 0.2), figure(OURS, bare, 0.3)]
    assert checked(good, server=True) == good
    assert checked([figure(OURS, bare, None)], server=False)
    with pytest.raises(SystemExit, match="A/A pair"):
        checked([figure(AGAIN, OURS, 0.2)], server=True)
    for share in (None, 0.0, 2.0):
        with pytest.raises(SystemExit, match="share of a core"):
            checked([figure(OURS, bare, share)], server=True)
