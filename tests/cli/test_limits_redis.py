"""``[serve] limits_storage`` in a real Redis (Debian's ``redis-server``, started here on a free
loopback port): two gateways' limiters, as two replicas, count one caller's calls together; a
Redis that cannot be reached refuses the call rather than let it past its limit."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest

from amends_toolkit._errors import LimitExceeded
from amends_toolkit.cli._config import LimitsConfig
from amends_toolkit.cli._limits import CallerLimits, limits_storage
from conformance._servers import closed_port

pytestmark = pytest.mark.anyio

FOUND = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/sbin:/usr/bin")
if FOUND is None:
    pytest.skip(
        "redis-server is not installed (apt-get install -y redis-server; .ci/run installs it)",
        allow_module_level=True,
    )
REDIS: str = FOUND
READY_WITHIN = 30.0
"""Seconds redis-server may take to answer PING on a loaded machine."""


def answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    port = closed_port()
    server = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + READY_WITHIN
        while not answers_ping(port):
            if server.poll() is not None:
                assert server.stderr is not None
                raise AssertionError(server.stderr.read().decode())
            assert time.monotonic() < deadline, "redis-server did not answer PING"
            # Readiness is PING's answer; this only spaces the tries.
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()


def replica(url: str, profile: str) -> CallerLimits:
    return CallerLimits({profile: LimitsConfig(calls_per_minute=2)}, storage=limits_storage(url))


async def call(limits: CallerLimits, profile: str, caller: str) -> None:
    async with limits.admitted(profile, caller):
        pass


async def test_two_replicas_count_a_callers_calls_together(redis_url: str) -> None:
    first, second = replica(redis_url, "eng"), replica(redis_url, "eng")
    await call(first, "eng", "key:alice")
    await call(second, "eng", "key:alice")
    with pytest.raises(LimitExceeded) as refused:
        await call(first, "eng", "key:alice")
    assert refused.value.retry_after is not None
    assert 1 <= refused.value.retry_after <= 61
    assert "This caller made 2 calls in the last minute" in refused.value.model_message
    with pytest.raises(LimitExceeded):
        await call(second, "eng", "key:alice")
    await call(second, "eng", "key:bob")


async def test_a_redis_that_cannot_be_reached_refuses_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = replica(f"redis://127.0.0.1:{closed_port()}/0", "eng")
    with pytest.raises(LimitExceeded) as refused:
        await call(limits, "eng", "key:alice")
    assert refused.value.retryable
    assert refused.value.model_message == (
        "The gateway cannot count this caller's calls right now; call again in 1 second(s)."
    )
    assert "gateway.limits_storage_failed" in caplog.text
    # The refused call holds none of the caller's calls in flight.
    assert limits._running == {}


async def test_a_callers_second_call_is_held_to_max_in_flight_while_the_first_is_counted(
    redis_url: str,
) -> None:
    limits = CallerLimits(
        {"ops": LimitsConfig(calls_per_minute=10, max_in_flight=1)},
        storage=limits_storage(redis_url),
    )
    held, done = anyio.Event(), anyio.Event()
    entered: list[str] = []
    refused: list[str] = []

    async def one(name: str) -> None:
        try:
            async with limits.admitted("ops", "key:carol"):
                entered.append(name)
                held.set()
                await done.wait()
        except LimitExceeded:
            refused.append(name)

    async with anyio.create_task_group() as tasks:
        # Both begin before the first's count in Redis (a worker thread) has answered.
        tasks.start_soon(one, "first")
        tasks.start_soon(one, "second")
        await held.wait()
        await anyio.wait_all_tasks_blocked()
        done.set()
    assert (entered, refused) == (["first"], ["second"])
