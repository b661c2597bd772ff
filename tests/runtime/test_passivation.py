"""Passivation: an actor spawned with ``idle_timeout`` leaves memory when idle and comes back on
its next call, once however many calls come, from fresh state, with no restart counted."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import Restart, Runtime

from .sources import Honouring, Scripted

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

IDLE = 30.0


class Held(Scripted):
    """A source whose lifespan counts its entries and exits and holds what it learned, so a
    fresh incarnation knows nothing; leaving it waits for ``leave`` when that is given."""

    def __init__(self, leave: anyio.Event | None = None) -> None:
        super().__init__("held")
        self.entered = 0
        self.left = 0
        self.learned: list[str] = []
        self.leave = leave

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.entered += 1
        self.learned = []
        try:
            yield
        finally:
            if self.leave is not None:
                with anyio.CancelScope(shield=True):
                    await self.leave.wait()
            self.left += 1

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "learn":
            self.learned.append(str(input.get("text")))
            return list(self.learned)
        return await super().call(tool, input)


class HeldInline(Held):
    honours_cancellation = True


@pytest.mark.virtual_clock
@pytest.mark.parametrize("kind", [Held, HeldInline])
async def test_an_idle_actor_leaves_its_lifespan_and_its_next_call_starts_it_fresh(
    kind: type[Held],
) -> None:
    source = kind()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        assert await ref.call("learn", {"text": "a"}) == ["a"]
        assert await ref.call("learn", {"text": "b"}) == ["a", "b"]
        await anyio.sleep(IDLE - 1)
        assert (source.entered, source.left) == (1, 0)
        assert ref.statistics().state == "running"
        await anyio.sleep(2)
        assert (source.entered, source.left) == (1, 1)
        assert ref.statistics().state == "passivated"
        assert await ref.call("learn", {"text": "c"}) == ["c"]
        assert (source.entered, source.left) == (2, 1)
        stats = ref.statistics()
        assert (stats.state, stats.restarts, stats.passivations) == ("running", 0, 1)
        assert runtime.children() == (ref,)


@pytest.mark.virtual_clock
async def test_each_call_starts_the_idle_clock_again() -> None:
    source = Held()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        for text in "abcd":
            assert await ref.call("echo", {"text": text}) == {"text": text}
            await anyio.sleep(IDLE - 1)
        assert (source.entered, source.left) == (1, 0)
        await anyio.sleep(2)
        assert source.left == 1


@pytest.mark.virtual_clock
async def test_an_actor_spawned_with_an_idle_timeout_starts_nothing_until_its_first_request() -> (
    None
):
    source = Held()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        await anyio.sleep(IDLE * 10)
        assert source.entered == 0
        assert ref.statistics().state == "passivated"
        assert len(await ref.discover()) == 5
        assert source.entered == 1


@pytest.mark.virtual_clock
async def test_a_call_running_longer_than_the_idle_timeout_keeps_the_actor() -> None:
    source = Held()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ref.call, "wait", {})
            await anyio.sleep(IDLE * 5)
            assert source.left == 0
            assert ref.statistics().in_flight == 1
            source.release.set()
        await anyio.sleep(IDLE - 1)
        assert source.left == 0
        await anyio.sleep(2)
        assert source.left == 1


@pytest.mark.virtual_clock
@pytest.mark.parametrize("kind", [Held, HeldInline])
async def test_a_hundred_concurrent_first_calls_start_a_passivated_actor_once(
    kind: type[Held],
) -> None:
    built: list[Held] = []

    def factory() -> Held:
        built.append(kind())
        return built[-1]

    async with Runtime() as runtime:
        ref = await runtime.spawn(factory, idle_timeout=IDLE, max_concurrency=8, mailbox_size=16)
        for round in (1, 2):
            answers: list[at.JsonValue] = []

            async def call(text: str) -> None:
                answers.append(await ref.call("echo", {"text": text}))  # noqa: B023

            async with anyio.create_task_group() as tasks:
                for index in range(100):
                    tasks.start_soon(call, str(index))
            assert sorted(str(a["text"]) for a in answers if isinstance(a, dict)) == sorted(
                str(index) for index in range(100)
            )
            # One incarnation served them all: the factory built one source for it.
            assert len(built) == round
            assert [source.entered for source in built] == [1] * round
            await anyio.sleep(IDLE + 1)
            assert built[-1].left == 1
        assert ref.statistics().passivations == 2
        assert ref.statistics().restarts == 0


@pytest.mark.virtual_clock
@pytest.mark.parametrize("kind", [Held, HeldInline])
async def test_a_call_made_while_the_lifespan_is_left_waits_for_the_next_incarnation(
    kind: type[Held],
) -> None:
    leave = anyio.Event()
    source = kind(leave)
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        assert await ref.call("learn", {"text": "a"}) == ["a"]
        async with anyio.create_task_group() as tasks:
            await anyio.sleep(IDLE + 1)
            assert source.left == 0  # leaving, held by its cleanup
            answers: list[at.JsonValue] = []

            async def call() -> None:
                answers.append(await ref.call("learn", {"text": "b"}))

            tasks.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert answers == []
            assert ref.statistics().queued == 1
            leave.set()
        assert answers == [["b"]]
        assert (source.entered, source.left) == (2, 1)


@pytest.mark.virtual_clock
async def test_passivations_count_for_no_restart_intensity() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await runtime.spawn(
            source, idle_timeout=1.0, restart=Restart(policy="temporary", intensity=0)
        )
        for text in "abcdef":
            assert await ref.call("echo", {"text": text}) == {"text": text}
            await anyio.sleep(2)
        stats = ref.statistics()
        assert (stats.state, stats.restarts, stats.passivations) == ("passivated", 0, 6)


@pytest.mark.virtual_clock
async def test_a_passivated_actor_is_stopped_and_answers_later_calls_unavailable() -> None:
    source = Held()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        await ref.call("echo", {"text": "a"})
        await anyio.sleep(IDLE + 1)
        assert ref.statistics().state == "passivated"
        # At once (on the virtual clock), not abandoned after the grace.
        began = anyio.current_time()
        await runtime.stop(ref)
        assert anyio.current_time() == began
        assert ref.statistics().state == "stopped"
        assert runtime.children() == ()
        with pytest.raises(at.UnavailableError):
            await ref.call("echo", {"text": "b"})
        assert source.entered == 1


@pytest.mark.virtual_clock
async def test_a_running_actor_with_an_idle_timeout_stops_at_once() -> None:
    source = Held()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, idle_timeout=IDLE)
        await ref.call("echo", {"text": "a"})
        began = anyio.current_time()
        await runtime.stop(ref)
        assert anyio.current_time() == began
        assert source.left == 1
        assert ref.statistics().passivations == 0


async def test_spawn_refuses_an_idle_timeout_that_is_not_a_positive_number() -> None:
    async with Runtime() as runtime:
        for bad in (0, -1.0, float("inf"), float("nan")):
            with pytest.raises(
                ValueError, match="idle_timeout must be a positive number of seconds"
            ):
                await runtime.spawn(Held(), idle_timeout=bad)
