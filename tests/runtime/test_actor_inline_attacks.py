"""Inline calls under attack: slots never leak, a caller's cancellation stays a cancellation,
and no newcomer overtakes a caller that waits to send."""

from __future__ import annotations

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Runtime

from .sources import Honouring, Scripted
from .test_actor_inline import Dying, Halt, Lingering, Opening, ask, running

# Both backends: they deliver cancellation and wake waiters differently.
pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


async def holds_exactly(ref: ActorRef, source: Scripted, count: int) -> None:
    """``count`` calls run at once, and not one more."""
    before = source.started
    async with anyio.create_task_group() as tasks:
        for _ in range(count + 1):
            tasks.start_soon(ask, ref, "wait")
        await anyio.wait_all_tasks_blocked()
        assert source.started - before == count
        assert ref.statistics().in_flight == count
        assert ref.statistics().queued == 1
        source.release.set()
    source.release = anyio.Event()
    assert ref.statistics().in_flight == 0
    assert ref.statistics().queued == 0


async def test_every_way_a_call_ends_gives_its_slot_back_once() -> None:
    source = Lingering()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=2, call_timeout=3600.0)
        for _ in range(3):
            # A BaseException of an inline call.
            with pytest.raises(Halt):
                await ref.call("halt", {})
            # Callers cancelled while their requests wait for a slot.
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tasks:
                    for _ in range(4):
                        tasks.start_soon(ask, ref, "wait")
                    await anyio.wait_all_tasks_blocked()
                    assert ref.statistics().in_flight == 2
                    assert ref.statistics().queued == 2
                    scope.cancel()
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().in_flight == 0
            assert ref.statistics().queued == 0
        await holds_exactly(ref, source, 2)


@pytest.mark.virtual_clock
async def test_deadlines_passing_while_waiting_for_a_slot_give_no_slot_away() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, call_timeout=10.0)
        for _ in range(3):
            outcomes: list[str] = []

            async def call(out: list[str] = outcomes) -> None:
                with pytest.raises(at.UnavailableError) as raised:
                    await ref.call("wait", {})
                out.append(str(raised.value))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                assert ref.statistics().queued == 1
            assert len(outcomes) == 2
            assert ref.statistics().in_flight == 0
        await holds_exactly(ref, source, 1)


async def test_a_request_a_crash_finds_waiting_for_a_slot_runs_in_the_next_incarnation() -> None:
    source = Lingering()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1)
        async with anyio.create_task_group() as tasks:

            async def call(tool: str) -> None:
                with pytest.raises(at.UnavailableError):
                    await ref.call(tool, {})

            tasks.start_soon(call, "wait")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "held")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            source.crash.set()
            await anyio.wait_all_tasks_blocked()
        assert ref.statistics().restarts == 1
        # `held` never ran in the crashed incarnation: the next one ran it, as a queued call.
        assert source.texts[-1] == "held"
        assert ref.statistics().queued == 0
        before = source.started
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "wait")
            tasks.start_soon(ask, ref, "wait")
            await anyio.wait_all_tasks_blocked()
            assert source.started - before == 1
            assert ref.statistics().queued == 1
            source.release.set()


@pytest.mark.virtual_clock
async def test_a_caller_cancelled_as_its_inline_call_times_out_is_cancelled() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, call_timeout=10.0)
        with anyio.move_on_after(10.0) as scope:
            await ref.call("wait", {})
        assert scope.cancelled_caught
        assert ref.statistics().in_flight == 0


async def test_a_newcomer_never_overtakes_a_caller_waiting_to_send(anyio_backend: object) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("asyncio orders the tasks by when they were woken, as this test needs")
    source = Opening()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=1, mailbox_size=0)
        async with anyio.create_task_group() as tasks:

            async def first() -> None:
                await ask(ref, "wait", "first")
                await ask(ref, "echo", "newcomer")

            tasks.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "waiting")
            await anyio.wait_all_tasks_blocked()
            source.opened.set()
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["first"]
            source.release.set()
        assert source.texts == ["first", "waiting", "newcomer"]


async def test_a_caller_through_the_mailbox_never_overtakes_one_waiting_for_room() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1, mailbox_size=1)
        async with anyio.create_task_group() as tasks:

            async def first() -> None:
                await ask(ref, "wait", "first")
                await ask(ref, "echo", "newcomer")

            tasks.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "queued")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "waiting")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            # The worker takes `queued` as `first` ends: `waiting` is woken to send, and
            # `first`, woken before it, asks again while there is room.
            source.release.set()
        assert source.texts == ["first", "queued", "waiting", "newcomer"]


class DyingLater(Dying):
    """Its ``die`` waits for ``release`` first."""

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "die":
            self.texts.append("die")
            await self.release.wait()
        return await super().call(tool, input)


async def test_a_caller_woken_to_send_by_a_worker_that_then_leaves_still_sends() -> None:
    source = DyingLater()
    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1, mailbox_size=0)
        with anyio.fail_after(10):  # a lost wake-up would leave `waiting` waiting for ever
            await die_with_one_waiting(ref, source)
        assert source.ran_in == [1, 2]
        assert source.texts == ["die", "waiting"]
        assert ref.statistics().restarts == 1


async def die_with_one_waiting(
    ref: ActorRef, source: DyingLater, *, behind: tuple[str, ...] = ()
) -> None:
    async with anyio.create_task_group() as tasks:

        async def die() -> None:
            with pytest.raises(at.UnavailableError, match="the process died"):
                await ask(ref, "die")

        tasks.start_soon(die)
        await anyio.wait_all_tasks_blocked()
        for text in ("waiting", *behind):
            tasks.start_soon(ask, ref, "echo", text)
            await anyio.wait_all_tasks_blocked()
        assert source.texts == ["die"]
        source.release.set()
        # The worker answers `die`, waits for a request (waking `waiting`) and is at once
        # cancelled by the crash: `waiting` waits again, for the next incarnation.


async def test_a_caller_woken_to_send_that_finds_no_room_keeps_its_turn() -> None:
    source = DyingLater()
    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1, mailbox_size=0)
        with anyio.fail_after(10):
            await die_with_one_waiting(ref, source, behind=("behind", "last"))
        # `waiting`, woken for a place that went before it ran, waits again ahead of the
        # callers that were behind it.
        assert source.texts == ["die", "waiting", "behind", "last"]


@pytest.mark.virtual_clock
async def test_an_abandoned_actor_answers_a_request_waiting_for_a_slot_too() -> None:
    source = Honouring()
    answers: dict[str, str] = {}

    async def call(tool: str) -> None:
        with pytest.raises(at.UnavailableError) as raised:
            await ref.call(tool, {})
        answers[tool] = str(raised.value)

    try:
        async with Runtime(grace=2.0) as runtime:
            ref = await running(runtime, source, max_concurrency=1)
            with anyio.fail_after(60):  # broken, `echo` would wait for ever: fail instead
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(call, "stubborn")  # inline, and it ignores the stop
                    await anyio.wait_all_tasks_blocked()
                    tasks.start_soon(call, "echo")  # it waits for the slot
                    await anyio.wait_all_tasks_blocked()
                    assert ref.statistics().queued == 1
                    await runtime.stop(ref)  # abandoned after the grace
                    await anyio.wait_all_tasks_blocked()
                    stopped = dict(answers)
                    source.release.set()
    finally:
        source.release.set()
    assert stopped.keys() == {"echo"}
    assert stopped["echo"].endswith("the source is stopped")
    assert source.texts == [None]  # `echo` never ran


async def test_a_caller_cancelled_as_a_stop_cuts_its_inline_call_sees_its_cancellation() -> None:
    source = Honouring()
    scopes: list[anyio.CancelScope] = []
    outcome: list[type[BaseException]] = []
    callers: list[int] = []

    async def call() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            callers.append(anyio.get_current_task().id)
            try:
                await ref.call("wait", {})
            except BaseException as error:
                outcome.append(type(error))
                raise

    async with Runtime() as runtime:
        ref = await running(runtime, source)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert source.tasks == callers  # it runs inline
            scopes[0].cancel()
            await runtime.stop(ref)  # stops the actor before the caller runs again
        assert scopes[0].cancelled_caught
    assert outcome == [anyio.get_cancelled_exc_class()]
    assert source.cancelled == 1
