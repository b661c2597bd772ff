"""A profile's limits per caller, on a virtual clock: the ``limits`` library's memory storage
reads the time of ``FakeTime``, so a minute passes in no time."""

from __future__ import annotations

import limits.storage.memory
import pytest

from amends_toolkit._errors import LimitExceeded
from amends_toolkit.cli._config import LimitsConfig
from amends_toolkit.cli._limits import IN_FLIGHT_RETRY_AFTER, CallerLimits

pytestmark = pytest.mark.anyio


class FakeTime:
    """A clock that moves only when a test says."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(limits.storage.memory, "time", fake)
    return fake


def limiter(clock: FakeTime, **limit: int) -> CallerLimits:
    return CallerLimits({"eng": LimitsConfig(**limit)}, clock=clock.time)


async def call(limiter: CallerLimits, caller: str = "alice", profile: str = "eng") -> None:
    async with limiter.admitted(profile, caller):
        pass


async def test_a_caller_past_calls_per_minute_is_refused_until_its_oldest_call_is_a_minute_old(
    clock: FakeTime,
) -> None:
    limits = limiter(clock, calls_per_minute=3)
    await call(limits)
    clock.now += 20
    await call(limits)
    await call(limits)
    with pytest.raises(LimitExceeded) as refused:
        await call(limits)
    error = refused.value
    # The first call, 20 s ago, leaves the window in 40 s (and counts at its very end).
    assert error.retry_after == 41.0
    assert error.retryable
    failure = error.to_failure()
    assert failure.code == "UnavailableError"
    assert failure.retryable
    assert failure.message == (
        "This caller made 3 calls in the last minute, the most its profile allows; "
        "call again in 41 second(s)."
    )
    # Another caller of the profile, and a profile without limits, are not held back.
    await call(limits, caller="bob")
    for _ in range(10):
        await call(limits, profile="default")
    clock.now += 40
    with pytest.raises(LimitExceeded):
        await call(limits)
    clock.now += 1
    await call(limits)


async def test_a_refused_call_is_not_counted(clock: FakeTime) -> None:
    limits = limiter(clock, calls_per_minute=1)
    await call(limits)
    for _ in range(5):
        with pytest.raises(LimitExceeded):
            await call(limits)
    clock.now += 61
    await call(limits)


async def test_a_caller_past_max_in_flight_is_refused_at_once_and_served_when_one_ends(
    clock: FakeTime,
) -> None:
    limits = limiter(clock, max_in_flight=2)
    async with limits.admitted("eng", "alice"), limits.admitted("eng", "alice"):
        with pytest.raises(LimitExceeded) as refused:
            await call(limits)
        assert refused.value.retry_after == IN_FLIGHT_RETRY_AFTER
        assert "This caller has 2 calls running" in refused.value.model_message
        await call(limits, caller="bob")
    async with limits.admitted("eng", "alice"):
        await call(limits)


async def test_a_call_that_fails_gives_its_slot_back(clock: FakeTime) -> None:
    limits = limiter(clock, max_in_flight=1)
    with pytest.raises(RuntimeError):
        async with limits.admitted("eng", "alice"):
            raise RuntimeError("the call failed")
    await call(limits)


async def test_a_call_refused_for_in_flight_uses_none_of_the_minute(clock: FakeTime) -> None:
    limits = limiter(clock, max_in_flight=1, calls_per_minute=2)
    async with limits.admitted("eng", "alice"):
        for _ in range(3):
            with pytest.raises(LimitExceeded, match="calls running"):
                await call(limits)
    await call(limits)
    with pytest.raises(LimitExceeded, match="in the last minute"):
        await call(limits)


async def test_a_caller_not_known_is_not_limited(clock: FakeTime) -> None:
    limits = limiter(clock, calls_per_minute=1, max_in_flight=1)
    async with limits.admitted("eng", None):
        await call(limits)
