"""The actor under attack: inline calls never leak a slot, a caller's cancellation stays a
cancellation, and no newcomer overtakes a caller that waits to send; a worker takes a request
only with a slot and keeps the slot while requests wait; requests waiting for a slot stay in the
mailbox."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Runtime

from .sources import Crashing, Honouring, Scripted
from .test_actor import Dying, Gated, Halt, Lingering, Opening, ask, running, told

pytestmark = pytest.mark.anyio


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


@pytest.mark.both_backends
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


@pytest.mark.both_backends
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


@pytest.mark.both_backends
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


@pytest.mark.both_backends
@pytest.mark.virtual_clock
async def test_a_caller_cancelled_as_its_inline_call_times_out_is_cancelled() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, call_timeout=10.0)
        with anyio.move_on_after(10.0) as scope:
            await ref.call("wait", {})
        assert scope.cancelled_caught
        assert ref.statistics().in_flight == 0


@pytest.mark.both_backends
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


@pytest.mark.both_backends
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


@pytest.mark.both_backends
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


@pytest.mark.both_backends
async def test_a_caller_woken_to_send_that_finds_no_room_keeps_its_turn() -> None:
    source = DyingLater()
    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1, mailbox_size=0)
        with anyio.fail_after(10):
            await die_with_one_waiting(ref, source, behind=("behind", "last"))
        # `waiting`, woken for a place that went before it ran, waits again ahead of the
        # callers that were behind it.
        assert source.texts == ["die", "waiting", "behind", "last"]


@pytest.mark.both_backends
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


@pytest.mark.both_backends
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


async def within(scope: anyio.CancelScope, call: Awaitable[object]) -> None:
    with scope:
        await call


@pytest.mark.both_backends
async def test_a_worker_whose_caller_left_mid_line_gives_its_slot_back_and_the_rest_run() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            first = anyio.CancelScope()
            tasks.start_soon(within, first, ask(ref, "wait", "first"))
            await anyio.wait_all_tasks_blocked()
            for text in ("second", "third"):
                tasks.start_soon(ask, ref, "echo", text)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 2
            assert ref.statistics().in_flight == 1
            first.cancel()
            await anyio.wait_all_tasks_blocked()
        assert source.texts == ["first", "second", "third"]
        assert source.cancelled == 1
        assert ref.statistics().queued == 0
        await holds_exactly(ref, source, 1)


@pytest.mark.virtual_clock
async def test_a_worker_whose_call_timed_out_mid_line_is_replaced_and_the_rest_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = Honouring()
    outcomes: dict[str, str] = {}

    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1, call_timeout=10.0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(told, outcomes, ref, "wait", "first")
            await anyio.sleep(5.0)
            for text in ("second", "third"):
                tasks.start_soon(told, outcomes, ref, "echo", text)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 2
        assert outcomes == {
            "first": "scripted: wait: no answer within the call_timeout",
            "second": "{'text': 'second'}",
            "third": "{'text': 'third'}",
        }
        assert anyio.current_time() < 11.0
        assert ref.statistics().queued == 0
        await holds_exactly(ref, source, 1)
    assert [r.getMessage() for r in caplog.records].count("call.timed_out") == 1


@pytest.mark.both_backends
async def test_a_crash_mid_line_cuts_the_running_call_and_the_next_incarnation_runs_the_rest() -> (
    None
):
    source = Crashing()
    outcomes: dict[str, str] = {}

    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            for tool, text in (("wait", "first"), ("echo", "second"), ("echo", "third")):
                tasks.start_soon(told, outcomes, ref, tool, text)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 2
            source.crash.set()
        assert outcomes["first"].endswith("OSError: the process died")
        assert outcomes["second"] == "{'text': 'second'}"
        assert outcomes["third"] == "{'text': 'third'}"
        assert source.texts == ["first", "second", "third"]
        assert ref.statistics().restarts == 1
        assert source.entered == 2
        await holds_exactly(ref, source, 1)


@pytest.mark.both_backends
async def test_a_request_abandoned_while_waiting_for_a_slot_never_runs_nor_holds_the_line() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "wait", "inline")
            await anyio.wait_all_tasks_blocked()
            left = anyio.CancelScope()
            tasks.start_soon(within, left, ask(ref, "echo", "left"))
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "stays")
            await anyio.wait_all_tasks_blocked()
            left.cancel()
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["inline"]
            source.release.set()
        assert source.texts == ["inline", "stays"]
        assert ref.statistics().queued == 0
        # The line is empty again: the next call runs inline, in this task.
        await ask(ref, "echo", "after")
        assert source.tasks[-1] == anyio.get_current_task().id
        source.release = anyio.Event()
        await holds_exactly(ref, source, 1)


@pytest.mark.both_backends
@pytest.mark.parametrize("mailbox_size", [0, 1, 8])
async def test_callers_waiting_while_every_worker_waits_for_a_slot_run_in_order(
    anyio_backend: object, mailbox_size: int
) -> None:
    if anyio_backend != "asyncio" and mailbox_size < 6:
        # Callers woken together to put (two slots come free at once) put in the order they
        # run, which trio shuffles: the mailbox's order among them, not the workers'.
        pytest.skip("asyncio runs the callers woken together in the order they were woken")
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=2, mailbox_size=mailbox_size)
        async with anyio.create_task_group() as tasks:
            for text in ("one", "two"):
                tasks.start_soon(ask, ref, "wait", text)  # inline, a slot each
                await anyio.wait_all_tasks_blocked()
            texts = [f"queued {i}" for i in range(6)]
            for text in texts:
                tasks.start_soon(ask, ref, "echo", text)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().in_flight == 2
            source.release.set()
        assert source.texts == ["one", "two", *texts]
        assert ref.statistics().queued == 0
        source.release = anyio.Event()
        await holds_exactly(ref, source, 2)


@pytest.mark.both_backends
async def test_a_stop_mid_line_answers_the_queued_calls_and_runs_none_of_them() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}

    async with Runtime() as runtime:
        ref = await running(runtime, source, inline=False, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            for tool, text in (("wait", "first"), ("echo", "second"), ("echo", "third")):
                tasks.start_soon(told, outcomes, ref, tool, text)
                await anyio.wait_all_tasks_blocked()
            await runtime.stop(ref)
    assert source.texts == ["first"]
    assert outcomes["first"].endswith("the source stopped while the call ran")
    assert outcomes["second"].endswith("the source is stopped")
    assert outcomes["third"].endswith("the source is stopped")


@pytest.mark.virtual_clock
async def test_a_slot_that_comes_at_a_queued_calls_deadline_never_runs_it() -> None:
    # The inline call ignores its deadline (10) and ends at the queued call's (11): the caller,
    # woken by its deadline, leaves before the worker given the slot can take its request.
    source = Honouring()
    async with Runtime(grace=5.0) as runtime:
        ref = await running(runtime, source, max_concurrency=1, call_timeout=10.0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "stubborn", "inline")
            await anyio.sleep(1.0)

            async def late() -> None:
                with pytest.raises(at.UnavailableError, match="no answer within the call_timeout"):
                    await ask(ref, "echo", "late")

            tasks.start_soon(late)
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(10.0)
            source.release.set()
            assert ref.statistics().queued == 1
    assert source.texts == ["inline"]
    assert anyio.current_time() == 11.0


class Hogging(Honouring):
    """``hog`` waits for ``release`` (ignoring cancellation), then holds the event loop for
    ``seconds``, as a call that computes without awaiting does: the clock passes meanwhile."""

    def __init__(self, seconds: float) -> None:
        super().__init__("hogging")
        self.seconds = seconds

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "hog":
            self.texts.append("hog")
            with anyio.CancelScope(shield=True):
                await self.release.wait()
            time.sleep(self.seconds)  # noqa: ASYNC251 - the loop held, as by a computation
            return "hogged"
        return await super().call(tool, input)


async def test_a_call_whose_deadline_passed_before_a_slot_came_never_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The one slot comes free after the queued call's deadline, in the same turn of the loop
    # as that deadline: the worker given the slot runs before the caller hears its deadline.
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = Hogging(seconds=0.4)
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, call_timeout=0.2)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "hog")  # inline, holding the slot

            async def late() -> None:
                with pytest.raises(at.UnavailableError, match="no answer within the call_timeout"):
                    await ask(ref, "echo", "late")

            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(late)
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            source.release.set()
        assert source.texts == ["hog"]
        assert ref.statistics().queued == 0
    assert [r.getMessage() for r in caplog.records].count("call.timed_out") == 1


class SlowToLeaveAfterACrash(Crashing):
    """A crashing source whose lifespan takes ``seconds`` to leave (a process that takes its
    time to exit), shielded."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            async with super().lifespan():
                yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(self.seconds)


@pytest.mark.virtual_clock
async def test_a_call_a_crash_cut_learns_the_crash_even_if_its_deadline_passes_meanwhile(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The call ran (in a worker) when the crash cut it; its deadline passes while the crashed
    # incarnation leaves its lifespan: it is answered with the crash's cause as that is known
    # (within the grace), as an inline call is, and no timeout is logged for it.
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = SlowToLeaveAfterACrash(seconds=3.0)
    async with Runtime(grace=5.0) as runtime:
        ref = await running(runtime, source, inline=False, call_timeout=10.0)
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                with pytest.raises(at.UnavailableError) as raised:
                    await ask(ref, "wait", "cut")
                assert (anyio.current_time() - start, str(raised.value)) == (
                    12.0,
                    "crashing: the source crashed while the call ran: OSError: the process died",
                )

            start = anyio.current_time()
            tasks.start_soon(call)
            await anyio.sleep(9.0)
            source.crash.set()
    assert source.texts == ["cut"]
    assert "call.timed_out" not in [r.getMessage() for r in caplog.records]


@pytest.mark.both_backends
async def test_callers_that_leave_waiting_to_send_or_queued_leave_no_trace() -> None:
    # One slot, held inline; `queued` fills the mailbox, `outside` waits to send; both leave.
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, mailbox_size=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "wait", "inline")
            await anyio.wait_all_tasks_blocked()
            scopes = {text: anyio.CancelScope() for text in ("queued", "outside")}
            for text, scope in scopes.items():
                tasks.start_soon(within, scope, ask(ref, "echo", text))
                await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "last")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            scopes["outside"].cancel()
            await anyio.wait_all_tasks_blocked()
            # `last` took the place `outside` left, behind `queued`, whose caller now leaves.
            assert ref.statistics().queued == 1
            scopes["queued"].cancel()
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1  # it stays until a worker has a slot to skip it
            source.release.set()
        assert source.texts == ["inline", "last"]
        assert ref.statistics().queued == 0
        source.release = anyio.Event()
        await holds_exactly(ref, source, 1)


@pytest.mark.both_backends
async def test_a_worker_given_a_slot_for_a_request_another_took_gives_it_back() -> None:
    # Two slots, both held inline; one request queued, for which both workers wait for a slot.
    source = Gated()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=2)
        async with anyio.create_task_group() as tasks:
            for text in ("one", "two"):
                tasks.start_soon(ask, ref, "gate", text)
                await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "queued")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            source.open("one")
            await anyio.wait_all_tasks_blocked()
            source.open("two")
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["one", "two", "queued"]
        assert ref.statistics().in_flight == 0
        # Both slots are free and a worker waits: the next call runs inline, in this task.
        await ask(ref, "echo", "inline")
        assert source.tasks[-1] == anyio.get_current_task().id
        await holds_exactly(ref, source, 2)
