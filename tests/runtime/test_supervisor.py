from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Restart, Runtime
from amends_toolkit.testing import virtual_clock

from .sources import Crashing, Ending, Honouring, Scripted, SlowToLeave

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


class HonouringRaisingBase(RaisingBase):
    """A RaisingBase whose child runs in the runtime's task group (it honours cancellation)."""

    honours_cancellation = True


@pytest.mark.both_backends
@pytest.mark.parametrize("kind", [HonouringRaisingBase, RaisingBase], ids=["grouped", "detached"])
async def test_a_child_killed_by_an_unexpected_exception_is_a_crash_its_supervisor_restarts(
    kind: type[RaisingBase],
) -> None:
    # On trio a child's task raising anything but Cancelled must not end the program, nor may it
    # cancel the host's block through the runtime's task group on either backend.
    source = kind()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(policy="transient"))
        await anyio.wait_all_tasks_blocked()
        source.crash.set()
        with anyio.fail_after(10):
            await source.again.wait()
        assert await ref.call("echo", {"text": "after"}) == {"text": "after"}
        assert ref.statistics().state == "running"
        assert (source.entered, ref.statistics().restarts) == (2, 1)
        assert runtime.children() == (ref,)
        await anyio.lowlevel.checkpoint()  # the block is not cancelled: it goes past one


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


class HonouringSlowToLeave(SlowToLeave):
    """A source slow to leave that declares all the same that it honours cancellation."""

    honours_cancellation = True


@asynccontextmanager
async def rescued(*sources: SlowToLeave, after: float) -> AsyncIterator[None]:
    """Release ``sources`` ``after`` seconds from now at the latest, so that a test of a source
    that ignores a stop fails by its clock rather than hangs, and at the end; then wait until
    they have left."""

    def release() -> None:
        for source in sources:
            source.release.set()

    try:
        async with anyio.create_task_group() as tasks:

            async def rescue() -> None:
                await anyio.sleep(after)
                release()

            tasks.start_soon(rescue)
            yield
            tasks.cancel_scope.cancel()
    finally:
        release()
    await anyio.wait_all_tasks_blocked()
    assert all(source.left for source in sources)


@pytest.mark.parametrize(
    ("anyio_backend", "grace"),
    [(virtual_clock(), 2.0), ("asyncio", 0.05)],
    ids=["trio-virtual", "asyncio"],
    indirect=["anyio_backend"],
)
async def test_a_child_that_ignores_a_stop_is_left_behind_after_the_grace(grace: float) -> None:
    # Its source does not declare honours_cancellation, so it runs detached: a stop, and leaving
    # the runtime, may leave it behind. In the runtime's task group, leaving would wait for it.
    stopped, left = SlowToLeave("stopped", None), SlowToLeave("left", None)
    async with rescued(stopped, left, after=600 * grace):
        async with Runtime(grace=grace) as runtime:
            ref = await runtime.spawn(stopped)
            await runtime.spawn(left)
            await anyio.wait_all_tasks_blocked()
            started = anyio.current_time()
            await runtime.stop(ref)
            assert 0.9 * grace <= anyio.current_time() - started < 3 * grace
            assert [child.name for child in runtime.children()] == ["left"]
            assert not stopped.left
            with pytest.raises(at.UnavailableError):
                await ref.call("echo", {})
            started = anyio.current_time()
        assert 0.9 * grace <= anyio.current_time() - started < 3 * grace
        assert not stopped.left
        assert not left.left


@pytest.mark.virtual_clock
@pytest.mark.parametrize("built", [False, True], ids=["source", "factory"])
async def test_leaving_waits_for_a_child_that_declares_it_honours_cancellation(
    caplog: pytest.LogCaptureFixture, built: bool
) -> None:
    # Its child runs in the runtime's task group, which nothing outlives: a stop answers its
    # callers after the grace, and leaving waits for its lifespan to end. For a factory, the
    # first source it builds decides.
    caplog.set_level(logging.ERROR, logger="amends_toolkit")
    slow = HonouringSlowToLeave("slow", 10.0)
    async with Runtime(grace=2.0) as runtime:
        ref = await runtime.spawn((lambda: slow) if built else slow)
        await anyio.wait_all_tasks_blocked()
        started = anyio.current_time()
        await runtime.stop(ref)
        assert anyio.current_time() - started == pytest.approx(2.0)
        assert runtime.children() == ()
        with pytest.raises(at.UnavailableError):
            await ref.call("echo", {})
    assert anyio.current_time() - started == pytest.approx(10.0)
    assert slow.left
    assert [record.getMessage() for record in caplog.records] == ["actor.overdue"]


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


@pytest.mark.both_backends
async def test_a_hosts_own_exception_leaves_the_runtime_as_itself() -> None:
    refs: list[ActorRef] = []

    async def host() -> None:
        async with Runtime() as runtime:
            refs.extend(
                [await runtime.spawn(Honouring("grouped")), await runtime.spawn(Scripted())]
            )
            await anyio.wait_all_tasks_blocked()
            raise ValueError("mine")

    with pytest.raises(ValueError, match="mine") as raised:
        await host()
    assert type(raised.value) is ValueError  # not in an ExceptionGroup
    assert [ref.statistics().state for ref in refs] == ["stopped", "stopped"]


@pytest.mark.both_backends
async def test_a_cancellation_from_outside_leaves_the_runtime_as_a_cancellation() -> None:
    grouped, detached = Honouring("grouped"), Scripted("detached")
    with anyio.CancelScope() as outside:
        async with Runtime() as runtime:
            refs = [await runtime.spawn(grouped), await runtime.spawn(detached)]
            async with anyio.create_task_group() as callers:
                for ref in refs:
                    callers.start_soon(ref.call, "wait", {})
                await anyio.wait_all_tasks_blocked()
                outside.cancel()
                await anyio.sleep_forever()
        pytest.fail("the block went on past its cancellation")  # pragma: no cover
    assert outside.cancelled_caught
    assert (grouped.cancelled, detached.cancelled) == (1, 1)
    assert [ref.statistics().state for ref in refs] == ["stopped", "stopped"]


@pytest.mark.both_backends
async def test_a_deadline_that_passes_in_the_block_leaves_the_runtime_as_its_own() -> None:
    with anyio.move_on_after(0.01) as deadline:
        async with Runtime() as runtime:
            ref = await runtime.spawn(Honouring())
            await ref.call("wait", {})
    assert deadline.cancelled_caught
    assert ref.statistics().state == "stopped"


async def test_ten_thousand_spawns_and_stops_leave_the_runtimes_memory_flat() -> None:
    async def cycles(count: int) -> None:
        for turn in range(count):
            # In turn one in the runtime's task group and one detached.
            ref = await runtime.spawn(Honouring() if turn % 2 else Scripted())
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


class Failing(Scripted):
    """A source whose lifespan raises ``error`` as it is entered."""

    def __init__(self, error: Exception) -> None:
        super().__init__("failing")
        self.error = error

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        raise self.error
        yield  # pragma: no cover


@pytest.mark.parametrize(
    ("error", "traceback"),
    [
        (at.UnavailableError(source="failing", message="the server is down"), False),
        (OSError(2, "No such file or directory"), False),
        (RuntimeError("a bug in the source"), True),
    ],
)
async def test_a_crash_is_logged_in_its_words_and_a_defect_with_its_traceback(
    caplog: pytest.LogCaptureFixture, error: Exception, traceback: bool
) -> None:
    # A command that does not exist crashes its actor at each restart: a line each, not a
    # traceback each; a defect (any other exception) keeps its traceback.
    caplog.set_level(logging.INFO, logger="amends_toolkit")
    async with Runtime() as runtime:
        ref = await runtime.spawn(Failing(error), restart=Restart(intensity=0))
        with pytest.raises(at.UnavailableError, match="the source gave up"):
            await ref.discover()
    [crash] = [r for r in caplog.records if r.getMessage() == "actor.crashed"]
    assert (crash.exc_info is not None) is traceback
    if not traceback:
        assert crash.error == f"{type(error).__name__}: {error}"  # type: ignore[attr-defined]


class Exiting(Scripted):
    """A source whose lifespan raises ``leaving`` (the program's exit) as it is entered, once
    ``exit`` is set.

    Raised in the actor's own task: on asyncio, one raised in any other task (a task of the
    lifespan's, a worker's call) is raised by the event loop itself, as asyncio does with every
    task's ``KeyboardInterrupt`` and ``SystemExit``, and no task group hears it.
    """

    def __init__(self, leaving: BaseException) -> None:
        super().__init__("exiting")
        self.leaving = leaving
        self.exit = anyio.Event()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await self.exit.wait()
        raise self.leaving
        yield  # pragma: no cover


class HonouringExiting(Exiting):
    honours_cancellation = True


class Tidy(Honouring):
    """A source whose lifespan awaits as it is left: a cancelled one would not finish."""

    tidy = False

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        yield
        await anyio.lowlevel.checkpoint()
        self.tidy = True


@pytest.mark.both_backends
@pytest.mark.parametrize("kind", [HonouringExiting, Exiting], ids=["grouped", "detached"])
@pytest.mark.parametrize(
    "leaving", [SystemExit(3), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"]
)
async def test_the_programs_exit_in_a_child_cancels_the_block_and_leaves_it_as_itself(
    kind: type[Exiting], leaving: BaseException
) -> None:
    # Structured concurrency: it is no crash of the child, it ends the host's block. Raised from
    # the child's own task it would skip the task group on asyncio, and end the program with a
    # TrioInternalError from a detached child on trio.
    source, other = kind(leaving), Tidy("other")
    reached: list[str] = []

    async def host() -> None:
        async with Runtime() as runtime:
            refs.extend([await runtime.spawn(source), await runtime.spawn(other)])
            await anyio.wait_all_tasks_blocked()
            source.exit.set()
            try:
                await anyio.sleep_forever()
            finally:
                reached.append("cancelled")

    refs: list[ActorRef] = []
    with pytest.raises(type(leaving)) as raised:
        await host()
    assert raised.value is leaving
    assert reached == ["cancelled"]
    assert [ref.statistics().state for ref in refs] == ["stopped", "stopped"]
    assert other.tidy  # stopped as at any leaving, not cancelled
    with pytest.raises(at.UnavailableError):
        await refs[1].call("echo", {})


@pytest.mark.both_backends
async def test_a_runtime_left_in_another_task_than_the_one_that_entered_it_is_refused() -> None:
    runtime = Runtime()
    entered, left = anyio.Event(), anyio.Event()

    async def enter() -> None:
        await runtime.__aenter__()
        entered.set()
        await left.wait()
        await runtime.__aexit__(None, None, None)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(enter)
        await entered.wait()
        ref = await runtime.spawn(Honouring())
        with pytest.raises(RuntimeError, match="left in the task that entered it"):
            await runtime.__aexit__(None, None, None)
        # Refused before anything changed: the child serves, and its own task can leave it.
        assert await ref.call("echo", {"text": "still"}) == {"text": "still"}
        left.set()
    assert ref.statistics().state == "stopped"


@pytest.mark.both_backends
async def test_children_spawned_from_many_tasks_run_until_the_runtime_is_left() -> None:
    refs: list[ActorRef] = []
    async with anyio.create_task_group() as outside:
        spawn = anyio.Event()

        async def spawner(name: str) -> None:
            # A task that is not the one that entered the runtime, nor inside its block.
            await spawn.wait()
            refs.append(await runtime.spawn(Honouring(name)))

        outside.start_soon(spawner, "outside")
        async with Runtime() as runtime:
            spawn.set()
            async with anyio.create_task_group() as inside:
                for number in range(20):
                    source = Honouring(f"h{number}") if number % 2 else Scripted(f"s{number}")

                    async def spawned(source: Scripted) -> None:
                        refs.append(ref := await runtime.spawn(source))
                        assert await ref.call("echo", {"text": ref.name}) == {"text": ref.name}

                    inside.start_soon(spawned, source)
            await anyio.wait_all_tasks_blocked()
            assert len(runtime.children()) == 21
            assert all(ref.statistics().state == "running" for ref in refs)
    assert all(ref.statistics().state == "stopped" for ref in refs)
    with pytest.raises(RuntimeError, match="entered Runtime"):
        await runtime.spawn(Honouring())


@pytest.fixture
async def entered() -> AsyncIterator[Runtime]:
    """A runtime entered in a fixture's setup and left in its teardown, as hosts' tests do."""
    async with Runtime() as runtime:
        yield runtime


@pytest.mark.both_backends
async def test_a_runtime_entered_in_a_fixture_is_left_in_its_teardown(entered: Runtime) -> None:
    ref = await entered.spawn(Honouring())
    assert await ref.call("echo", {"text": "here"}) == {"text": "here"}


class CancellingAsItLeaves(SlowToLeave):
    """A source whose lifespan, as it is left, cancels ``host`` the way asyncio's own runner
    does at Ctrl-C (``Task.cancel()``, no cancel scope of anyio's), then finishes its shielded
    cleanup (its child runs in the Runtime's task group, which waits for it)."""

    honours_cancellation = True

    def __init__(self, host: asyncio.Task[object]) -> None:
        super().__init__("cancelling", 0.01)
        self.host = host

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with super().lifespan():
            try:
                yield
            finally:
                self.host.cancel()


@pytest.mark.parametrize("anyio_backend", ["asyncio"], indirect=True)
async def test_a_native_cancellation_while_the_runtime_is_left_leaves_every_scope_in_order() -> (
    None
):
    # Ctrl-C under asyncio.run is the main task's cancel(), whenever it comes: here, while the
    # Runtime stops its children as it is left. It must still leave its task group, so that
    # the scopes around it are left in order (else anyio raises "Attempted to exit a cancel
    # scope that isn't the current task's current cancel scope").
    host = asyncio.current_task()
    assert host is not None
    source = CancellingAsItLeaves(host)

    async def leave() -> None:
        async with anyio.create_task_group(), Runtime() as runtime:
            await runtime.spawn(source)
            await anyio.wait_all_tasks_blocked()

    with pytest.raises(asyncio.CancelledError):
        await leave()
    assert source.left
    host.uncancel()
