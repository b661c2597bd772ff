from __future__ import annotations

import gc
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Restart, Runtime

from .sources import Crashing, Ending, Scripted, SlowToLeave

pytestmark = pytest.mark.anyio


class Fresh(Crashing):
    """A crashing source that remembers what it learned: a fresh one knows nothing."""

    built = 0

    def __init__(self) -> None:
        super().__init__()
        Fresh.built += 1
        self.learned: list[str] = []

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "learn":
            self.learned.append(str(input.get("text")))
            return list(self.learned)
        return await super().call(tool, input)


@pytest.mark.virtual_clock
async def test_a_child_spawned_from_a_factory_is_built_again_for_each_incarnation() -> None:
    Fresh.built = 0
    built: list[Fresh] = []

    def factory() -> Fresh:
        built.append(Fresh())
        return built[-1]

    async with Runtime() as runtime:
        ref = await runtime.spawn(factory)
        assert ref.name == "crashing"
        assert await ref.call("learn", {"text": "a"}) == ["a"]
        await anyio.wait_all_tasks_blocked()
        built[-1].crash.set()
        await anyio.wait_all_tasks_blocked()
        assert await ref.call("learn", {"text": "b"}) == ["b"]
        assert ref.statistics().restarts == 1
    assert Fresh.built == 2


async def test_spawn_refuses_what_builds_no_source() -> None:
    async with Runtime() as runtime:
        with pytest.raises(TypeError, match="must build a tool source"):
            await runtime.spawn(lambda: "not a source")  # type: ignore[arg-type,return-value]
        with pytest.raises(TypeError, match="a function that builds"):
            await runtime.spawn(42)  # type: ignore[arg-type]


@pytest.mark.virtual_clock
async def test_a_transient_child_that_ends_normally_is_not_restarted() -> None:
    source = Ending()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(policy="transient"))
        await anyio.wait_all_tasks_blocked()
        source.end.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "stopped"
        assert source.entered == 1
        assert runtime.children() == ()
        with pytest.raises(at.UnavailableError):
            await ref.call("echo", {})


@pytest.mark.virtual_clock
async def test_a_transient_child_that_crashes_is_restarted() -> None:
    source = Ending()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(policy="transient"))
        await anyio.wait_all_tasks_blocked()
        source.crash.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "running"
        assert source.entered == 2


class Unexpected(BaseException):
    """Neither an Exception nor a cancellation: what a careless source may raise."""


class RaisingBase(Crashing):
    """A crashing source whose lifespan's task raises a BaseException that is no Exception."""

    def __init__(self) -> None:
        super().__init__()
        self.again = anyio.Event()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.entered += 1
        self.crash = anyio.Event()
        if self.entered == 2:
            self.again.set()

        async def watch() -> None:
            await self.crash.wait()
            raise Unexpected("not an Exception")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            yield
            tasks.cancel_scope.cancel()


@pytest.mark.both_backends
async def test_a_child_killed_by_an_unexpected_exception_is_a_crash_its_supervisor_restarts() -> (
    None
):
    # On trio a child's task raising anything but Cancelled must not end the program.
    source = RaisingBase()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(policy="transient"))
        await anyio.wait_all_tasks_blocked()
        source.crash.set()
        with anyio.fail_after(10):
            await source.again.wait()
        assert await ref.call("echo", {"text": "after"}) is not None
        assert ref.statistics().state == "running"
        assert (source.entered, ref.statistics().restarts) == (2, 1)


@pytest.mark.virtual_clock
async def test_a_permanent_child_that_ends_normally_is_restarted() -> None:
    source = Ending()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        await anyio.wait_all_tasks_blocked()
        source.end.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "running"
        assert source.entered == 2
        assert await ref.call("echo", {"text": "on"}) == {"text": "on"}


@pytest.mark.virtual_clock
async def test_a_temporary_child_is_given_up_at_its_first_crash_and_the_host_hears() -> None:
    heard: list[tuple[ActorRef, BaseException]] = []

    async def on_give_up(ref: ActorRef, error: BaseException) -> None:
        heard.append((ref, error))

    source = Ending()
    async with Runtime(on_give_up=on_give_up) as runtime:
        ref = await runtime.spawn(source, restart=Restart(policy="temporary", intensity=5))
        await anyio.wait_all_tasks_blocked()
        source.crash.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "failed"
        assert source.entered == 1
        assert runtime.children() == ()
    [(given_up, error)] = heard
    assert given_up is ref
    assert isinstance(error, BaseExceptionGroup)


@pytest.mark.virtual_clock
async def test_crashes_further_apart_than_the_period_never_give_a_child_up() -> None:
    heard: list[ActorRef] = []
    source = Crashing()
    async with Runtime(on_give_up=lambda ref, _: heard.append(ref)) as runtime:
        ref = await runtime.spawn(source, restart=Restart(intensity=1, period=10.0))
        for _ in range(4):
            await anyio.wait_all_tasks_blocked()
            source.crash.set()
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(11)
        assert ref.statistics().state == "running"
        assert ref.statistics().restarts == 4
    assert heard == []


@pytest.mark.virtual_clock
async def test_more_crashes_than_the_intensity_within_the_period_give_a_child_up() -> None:
    heard: list[ActorRef] = []
    source = Crashing()
    async with Runtime(on_give_up=lambda ref, _: heard.append(ref)) as runtime:
        ref = await runtime.spawn(source, restart=Restart(intensity=1, period=10.0))
        for _ in range(2):
            await anyio.wait_all_tasks_blocked()
            source.crash.set()
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(9)
        assert ref.statistics().state == "failed"
        assert ref.statistics().restarts == 1
        with pytest.raises(
            at.UnavailableError, match="last crash: OSError: the process died"
        ) as raised:
            await ref.call("echo", {})
        assert "process died" not in raised.value.model_message
    assert heard == [ref]


async def test_restart_refuses_what_is_no_policy() -> None:
    with pytest.raises(ValueError, match="permanent"):
        Restart(policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="period"):
        Restart(period=0)


async def test_the_runtime_lists_its_children_and_stops_one_while_the_others_serve() -> None:
    async with Runtime() as runtime:
        first = await runtime.spawn(Scripted("first"))
        second = await runtime.spawn(Scripted("second"))
        await anyio.wait_all_tasks_blocked()
        assert runtime.children() == (first, second)
        assert [ref.statistics().state for ref in runtime.children()] == ["running", "running"]
        await runtime.stop(first)
        assert runtime.children() == (second,)
        assert first.statistics().state == "stopped"
        with pytest.raises(at.UnavailableError):
            await first.call("echo", {})
        assert await second.call("echo", {"text": "on"}) == {"text": "on"}


@pytest.mark.virtual_clock
async def test_children_stop_concurrently_in_about_one_childs_time() -> None:
    sources = [SlowToLeave(f"slow{i}", 4.0) for i in range(5)]
    async with Runtime(grace=30.0) as runtime:
        for source in sources:
            await runtime.spawn(source)
        await anyio.wait_all_tasks_blocked()
        started = anyio.current_time()
    assert anyio.current_time() - started == pytest.approx(4.0)
    assert all(source.left for source in sources)


@pytest.mark.virtual_clock
async def test_a_child_that_ignores_a_stop_is_waited_for_only_the_grace() -> None:
    stubborn = SlowToLeave("stubborn", None)
    try:
        async with Runtime(grace=2.0) as runtime:
            ref = await runtime.spawn(stubborn)
            await anyio.wait_all_tasks_blocked()
            started = anyio.current_time()
            await runtime.stop(ref)
            assert anyio.current_time() - started == pytest.approx(2.0)
            assert runtime.children() == ()
            assert not stubborn.left
            with pytest.raises(at.UnavailableError):
                await ref.call("echo", {})
    finally:
        stubborn.release.set()
    await anyio.wait_all_tasks_blocked()
    assert stubborn.left


@pytest.mark.virtual_clock
async def test_a_caller_past_its_deadline_waits_only_the_grace_for_a_stubborn_source() -> None:
    source = Scripted()
    try:
        async with Runtime(grace=2.0) as runtime:
            ref = await runtime.spawn(source, call_timeout=10.0)
            started = anyio.current_time()
            with pytest.raises(at.UnavailableError, match="did not stop at its deadline"):
                await ref.call("stubborn", {})
            assert anyio.current_time() - started == pytest.approx(12.0)
    finally:
        source.release.set()  # else the abandoned actor would outlive the test


async def test_a_hosts_own_exception_leaves_the_runtime_as_itself() -> None:
    async def host() -> None:
        async with Runtime() as runtime:
            await runtime.spawn(Scripted())
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await host()


async def test_ten_thousand_spawns_and_stops_leave_the_runtimes_memory_flat() -> None:
    async def cycles(count: int) -> None:
        for _ in range(count):
            ref = await runtime.spawn(Scripted())
            await ref.call("echo", {})  # the child runs before it is stopped
            await runtime.stop(ref)

    async with Runtime() as runtime:
        await cycles(500)
        gc.collect()
        before = sys.getallocatedblocks()
        await cycles(10_000)
        gc.collect()
        grown = sys.getallocatedblocks() - before
        assert runtime.children() == ()
    # A child kept would hold hundreds of blocks: 10,000 of them would be millions.
    assert grown < 2_000, grown


@pytest.mark.virtual_clock
async def test_the_actor_logs_a_crash_and_a_restart(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="amends_toolkit")
    source = Crashing()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        await anyio.wait_all_tasks_blocked()
        source.crash.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().restarts == 1
    events = [record.getMessage() for record in caplog.records]
    assert "actor.crashed" in events
    assert "actor.restarted" in events
