"""The actor: what it runs and how it stops, and its calls run inline, in the caller's task, when it
has room (keeping every guarantee of the mailbox)."""

from __future__ import annotations

import functools
import inspect
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Restart, Runtime, ToolSource

from .sources import Crashing, Honouring, Scripted

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine

pytestmark = pytest.mark.anyio


async def test_ref_is_a_tool_source_of_the_same_name() -> None:
    async with Runtime() as runtime:
        ref = await runtime.spawn(Scripted("tasks"))
        assert isinstance(ref, ToolSource)
        assert ref.name == "tasks"
        names = [definition.name for definition in await ref.discover()]
        assert names == ["echo", "wait", "boom", "fail", "stubborn"]


async def test_calls_that_run_together_each_get_their_own_answer() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        answers: dict[int, object] = {}

        async def one(i: int) -> None:
            answers[i] = await ref.call("echo", {"text": str(i)})

        async with anyio.create_task_group() as tasks:
            for i in range(50):
                tasks.start_soon(one, i)
        assert answers == {i: {"text": str(i)} for i in range(50)}


async def test_a_slow_call_does_not_hold_up_the_others() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        async with anyio.create_task_group() as tasks:
            slow: list[object] = []

            async def wait() -> None:
                slow.append(await ref.call("wait", {}))

            tasks.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert source.started == 1
            assert await ref.call("echo", {"text": "quick"}) == {"text": "quick"}
            assert slow == []
            source.release.set()
        assert slow == ["released"]


async def test_call_is_cancelled_in_the_actor_when_its_caller_leaves() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ref.call, "wait", {})
                await anyio.wait_all_tasks_blocked()
                assert ref.statistics().in_flight == 1
                scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert source.cancelled == 1
        assert ref.statistics().in_flight == 0
        # The actor goes on serving, and reported no error for the cancelled call.
        assert await ref.call("echo", {"text": "after"}) == {"text": "after"}


async def test_a_cancelled_call_still_in_the_mailbox_never_runs() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ref.call, "wait", {})
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as inner:
                    never: at.JsonObject = {"text": "never"}
                    inner.start_soon(ref.call, "echo", never)
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()
            source.release.set()
        assert source.calls == ["wait"]


@pytest.mark.virtual_clock
async def test_a_call_past_its_timeout_is_unavailable() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, call_timeout=60.0)
        start = anyio.current_time()
        with pytest.raises(at.UnavailableError) as raised:
            await ref.call("wait", {})
        assert anyio.current_time() - start == pytest.approx(60.0)
        assert raised.value.retryable
        assert source.cancelled == 1


@pytest.mark.virtual_clock
async def test_a_callers_own_deadline_cancels_its_call_in_the_actor() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source)
        with pytest.raises(TimeoutError):
            with anyio.fail_after(5):
                await ref.call("wait", {})
        await anyio.wait_all_tasks_blocked()
        assert source.cancelled == 1


@pytest.mark.virtual_clock
async def test_a_source_that_ignores_cancellation_does_not_hold_its_caller() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, call_timeout=10.0)
        with pytest.raises(at.UnavailableError):
            await ref.call("stubborn", {})
        source.release.set()


async def test_a_defect_is_unknown_error_logged_and_the_actor_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="amends_toolkit")
    async with Runtime() as runtime:
        ref = await runtime.spawn(Scripted("buggy"))
        with pytest.raises(at.UnknownError) as raised:
            await ref.call("boom", {})
        assert raised.value.source == "buggy"
        assert raised.value.model_message == at.UnknownError.default_message
        assert await ref.call("echo", {"text": "still"}) == {"text": "still"}
        assert ref.statistics().restarts == 0
    defects = [record for record in caplog.records if "call.defect" in record.getMessage()]
    assert len(defects) == 1
    assert defects[0].exc_info is not None
    assert "a bug in the source" in str(defects[0].exc_info[1])


async def test_a_source_error_reaches_the_caller_as_it_was_raised() -> None:
    async with Runtime() as runtime:
        ref = await runtime.spawn(Scripted("s"))
        with pytest.raises(at.CallFailedError, match="it failed, as asked"):
            await ref.call("fail", {})
        with pytest.raises(at.NotFoundError):
            await ref.call("missing", {})


@pytest.mark.virtual_clock  # trio: wait_all_tasks_blocked sees the crash propagate
async def test_a_crashed_actor_is_restarted_and_serves_again() -> None:
    source = Crashing()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(intensity=3, period=5.0))
        async with anyio.create_task_group() as tasks:
            answers: list[object] = []

            async def running() -> None:
                with pytest.raises(at.UnavailableError):
                    await ref.call("wait", {})
                answers.append("unavailable")

            tasks.start_soon(running)
            await anyio.wait_all_tasks_blocked()
            source.crash.set()
        assert answers == ["unavailable"]
        assert await ref.call("echo", {"text": "again"}) == {"text": "again"}
        assert ref.statistics().restarts == 1
        assert source.entered == 2
        assert source.left == 1
    assert source.left == 2


@pytest.mark.virtual_clock
async def test_past_its_intensity_an_actor_answers_unavailable_and_never_hangs() -> None:
    source = Crashing()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, restart=Restart(intensity=2, period=60.0))
        for _ in range(3):
            await anyio.wait_all_tasks_blocked()
            source.crash.set()
            await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "failed"
        assert ref.statistics().restarts == 2
        with pytest.raises(at.UnavailableError):
            await ref.call("echo", {"text": "x"})
        with pytest.raises(at.UnavailableError):
            await ref.discover()


async def test_stopping_the_runtime_answers_every_queued_and_running_call() -> None:
    source = Scripted()
    outcomes: list[str] = []

    async def call(ref: ActorRef, tool: str) -> None:
        try:
            await ref.call(tool, {})
        except at.UnavailableError:
            outcomes.append(tool)

    async with anyio.create_task_group() as callers:
        async with Runtime() as runtime:
            ref = await runtime.spawn(source, max_concurrency=1, mailbox_size=4)
            callers.start_soon(call, ref, "wait")
            await anyio.wait_all_tasks_blocked()
            for _ in range(3):
                callers.start_soon(call, ref, "echo")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 3
        assert ref.statistics().state == "stopped"
    assert sorted(outcomes) == ["echo", "echo", "echo", "wait"]
    with pytest.raises(at.UnavailableError):
        await ref.call("echo", {})


async def test_a_flood_of_calls_meets_backpressure_from_the_mailbox() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=2, mailbox_size=3)
        async with anyio.create_task_group() as tasks:
            for _ in range(20):
                tasks.start_soon(ref.call, "wait", {})
            await anyio.wait_all_tasks_blocked()
            stats = ref.statistics()
            assert stats.in_flight == 2
            assert stats.queued == 3
            assert source.started == 2  # and the other 15 callers wait to send
            assert source.started == 2
            source.release.set()
        assert source.started == 20


async def test_spawn_refuses_bad_options_at_once() -> None:
    async with Runtime() as runtime:
        with pytest.raises(ValueError, match="max_concurrency"):
            await runtime.spawn(Scripted(), max_concurrency=0)
        with pytest.raises(ValueError, match="call_timeout"):
            await runtime.spawn(Scripted(), call_timeout=0)
    with pytest.raises(ValueError, match="intensity"):
        Restart(intensity=-1)


async def test_spawn_needs_an_entered_runtime() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await Runtime().spawn(Scripted())


async def test_a_stopped_actor_is_stopped_once_and_answers_unavailable() -> None:
    async with Runtime() as runtime:
        ref = await runtime.spawn(Scripted())
        await runtime.stop(ref)
        await runtime.stop(ref)
        assert ref.statistics().state == "stopped"
        assert runtime.children() == ()
        with pytest.raises(at.UnavailableError):
            await ref.call("echo", {})


@pytest.mark.virtual_clock
async def test_a_caller_waiting_to_send_to_a_mailbox_of_size_0_is_served_by_a_free_worker() -> None:
    source = Scripted()
    answers: list[object] = []

    async def echo(ref: ActorRef) -> None:
        answers.append(await ref.call("echo", {"text": "after"}))

    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=1, mailbox_size=0)
        with anyio.fail_after(10):  # broken, it would wait for ever: fail instead
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ref.call, "wait", {})
                await anyio.wait_all_tasks_blocked()
                tasks.start_soon(echo, ref)  # the one worker is busy: it waits to send
                await anyio.wait_all_tasks_blocked()
                assert answers == []
                source.release.set()
    assert answers == [{"text": "after"}]


def me() -> int:
    return anyio.get_current_task().id


async def told(outcomes: dict[str, str], ref: ActorRef, tool: str, text: str) -> None:
    """Ask ``ref`` to run ``tool`` on ``text``; note under ``text`` its answer, or the words of
    the ``UnavailableError`` it raised."""
    try:
        outcomes[text] = str(await ref.call(tool, {"text": text}))
    except at.UnavailableError as error:
        outcomes[text] = str(error)


async def ask(ref: ActorRef, tool: str, text: str | None = None) -> None:
    await ref.call(tool, {} if text is None else {"text": text})


class Opening(Honouring):
    """Its lifespan is entered once ``opened`` is set, so calls made before wait in the mailbox;
    ``nest`` calls ``echo`` through ``ref`` (this source's own actor) with the text ``nested``."""

    def __init__(self) -> None:
        super().__init__("opening")
        self.opened = anyio.Event()
        self.ref: ActorRef | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await self.opened.wait()
        yield

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "nest":
            assert self.ref is not None
            self.texts.append("nest")
            return await self.ref.call("echo", {"text": "nested"})
        return await super().call(tool, input)


class Lingering(Crashing):
    """``linger`` waits; cancelled, it cleans up for a second (shielded) and then records how many
    times its lifespan had been left; ``halt`` raises a BaseException that is no cancellation."""

    honours_cancellation = True

    def __init__(self) -> None:
        super().__init__()
        self.left_when_done: list[int] = []

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "linger":
            try:
                await anyio.sleep_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(1.0)
                self.left_when_done.append(self.left)
        if tool == "halt":
            raise Halt
        return await super().call(tool, input)


class Dying(Honouring):
    """``die`` fails as a call to a server process that just died does: it crashes the lifespan
    (cancelling its body at once) and answers its caller in the same step. Calls record the
    incarnation they ran in."""

    def __init__(self) -> None:
        super().__init__("dying")
        self.entered = 0
        self.ran_in: list[int] = []
        self.scope: anyio.CancelScope | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.entered += 1
        died = self.died = anyio.Event()
        with anyio.CancelScope() as self.scope:
            yield
        if died.is_set():
            raise OSError("the process died")

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        self.ran_in.append(self.entered)
        if tool == "die":
            assert self.scope is not None
            self.died.set()
            self.scope.cancel()
            raise at.UnavailableError(source=self.name, message="the process died")
        return await super().call(tool, input)


class Halt(BaseException):
    """Neither an Exception nor a cancellation, as KeyboardInterrupt."""


async def running(runtime: Runtime, source: at.ToolSource, **options: object) -> ActorRef:
    ref = await runtime.spawn(source, **options)  # type: ignore[arg-type]
    await anyio.wait_all_tasks_blocked()
    assert ref.statistics().state == "running"
    return ref


async def test_an_actor_with_room_runs_a_call_in_its_callers_task() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        assert await ref.call("echo", {"text": "here"}) == {"text": "here"}
        assert len(await ref.discover()) == 5
        assert source.tasks == [me()]
        assert source.discovers == 1
        assert ref.statistics().in_flight == 0


async def test_a_hosts_source_without_the_declaration_goes_through_the_mailbox() -> None:
    source = Scripted()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        assert await ref.call("echo", {"text": "there"}) == {"text": "there"}
        assert source.tasks != [me()]


async def test_inline_false_forces_the_mailbox_and_true_runs_a_hosts_source_inline() -> None:
    declared, undeclared = Honouring("declared"), Scripted("undeclared")
    async with Runtime() as runtime:
        forced_out = await running(runtime, declared, inline=False)
        forced_in = await running(runtime, undeclared, inline=True)
        await forced_out.call("echo", {})
        await forced_in.call("echo", {})
        assert declared.tasks != [me()]
        assert undeclared.tasks == [me()]
        with pytest.raises(TypeError, match="inline must be True, False or None"):
            await runtime.spawn(Scripted(), inline="yes")  # type: ignore[arg-type]


async def test_every_built_in_source_declares_it_honours_cancellation() -> None:
    async with httpx.AsyncClient() as client:
        sources: list[at.ToolSource] = [
            at.mcp.http(name="remote", url="http://127.0.0.1:9/mcp", client=client),
            at.mcp.stdio(name="local", command="true"),
            at.http.make(name="api", base_url="http://127.0.0.1:9", operations=[], client=client),
        ]
        for source in sources:
            assert getattr(source, "honours_cancellation", None) is True


@pytest.mark.virtual_clock
async def test_without_room_a_call_waits_in_the_mailbox_and_keeps_the_bound() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, mailbox_size=4)
        async with anyio.create_task_group() as tasks:
            callers: dict[str, int] = {}

            async def call(tool: str, text: str) -> None:
                callers[text] = me()
                await ref.call(tool, {"text": text})

            tasks.start_soon(call, "wait", "first")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(call, "echo", "second")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(call, "echo", "third")
            await anyio.wait_all_tasks_blocked()
            # `second` waits in the mailbox (a worker waits for the slot the inline `first`
            # holds); `third`, which came while someone waited, waits behind it rather than
            # running now.
            assert source.texts == ["first"]
            assert ref.statistics().in_flight == 1
            assert ref.statistics().queued == 2
            source.release.set()
        assert source.texts == ["first", "second", "third"]
        ran = dict(zip(source.texts, source.tasks, strict=True))
        assert ran["first"] == callers["first"]
        assert ran["second"] != callers["second"]
        assert ran["third"] != callers["third"]
        await ref.call("echo", {"text": "fourth"})
        assert source.tasks[-1] == me()


@pytest.mark.virtual_clock
async def test_worker_calls_and_inline_calls_share_max_concurrency() -> None:
    source = Opening()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=2)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "wait", "queued")
            await anyio.wait_all_tasks_blocked()
            source.opened.set()
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "wait", "inline")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "over")
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["queued", "inline"]
            assert ref.statistics().in_flight == 2
            assert ref.statistics().queued == 1
            source.release.set()
        assert source.texts == ["queued", "inline", "over"]


@pytest.mark.virtual_clock
async def test_a_call_with_room_still_waits_behind_the_requests_in_the_mailbox() -> None:
    source = Opening()
    async with Runtime() as runtime:
        ref = source.ref = await runtime.spawn(source)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "nest")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "queued")
            await anyio.wait_all_tasks_blocked()
            # `nest` runs first and calls `echo` while `queued` is still in the mailbox.
            source.opened.set()
        assert source.texts == ["nest", "queued", "nested"]


@pytest.mark.virtual_clock
async def test_an_inline_call_past_its_timeout_is_unavailable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, call_timeout=60.0)
        start = anyio.current_time()
        with anyio.fail_after(120), pytest.raises(at.UnavailableError) as raised:
            await ref.call("wait", {})
        assert anyio.current_time() - start == pytest.approx(60.0)
        assert "no answer within the call_timeout" in str(raised.value)
        assert source.cancelled == 1
        assert source.tasks == [me()]
        assert ref.statistics().in_flight == 0
        assert await ref.call("echo", {"text": "on"}) == {"text": "on"}
    assert [r.getMessage() for r in caplog.records].count("call.timed_out") == 1


@pytest.mark.virtual_clock
async def test_a_callers_cancellation_cancels_its_inline_call_and_propagates() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        caller: list[int] = []

        async def call() -> None:
            caller.append(me())
            await ref.call("wait", {})

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks == caller
                assert ref.statistics().in_flight == 1
                scope.cancel()
        assert scope.cancelled_caught
        assert source.cancelled == 1
        assert ref.statistics().in_flight == 0
        with pytest.raises(TimeoutError):
            with anyio.fail_after(5):
                await ref.call("wait", {})
        assert source.cancelled == 2
        assert await ref.call("echo", {"text": "after"}) == {"text": "after"}


async def test_an_inline_call_answers_as_a_worker_does(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="amends_toolkit")
    source = Honouring("buggy")
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        with pytest.raises(at.CallFailedError, match="it failed, as asked"):
            await ref.call("fail", {})
        with pytest.raises(at.UnknownError) as raised:
            await ref.call("boom", {})
        assert raised.value.source == "buggy"
        assert "defect: RuntimeError('a bug in the source')" in str(raised.value)
        assert source.tasks == [me(), me()]
    [defect] = [r for r in caplog.records if r.getMessage() == "call.defect"]
    assert defect.exc_info is not None
    assert "a bug in the source" in str(defect.exc_info[1])


async def test_a_base_exception_of_an_inline_call_reaches_its_caller() -> None:
    source = Lingering()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        with pytest.raises(Halt):
            await ref.call("halt", {})
        assert ref.statistics().in_flight == 0
        assert await ref.call("echo", {"text": "on"}) == {"text": "on"}
        assert ref.statistics().restarts == 0


@pytest.mark.virtual_clock
async def test_a_stop_cancels_an_inline_call_and_the_lifespan_is_left_after_it() -> None:
    source = Lingering()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                with pytest.raises(at.UnavailableError, match="stopped while the call ran"):
                    await ref.call("linger", {})

            tasks.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().in_flight == 1
            await runtime.stop(ref)
        assert source.left_when_done == [0]
        assert source.left == 1
        assert ref.statistics().state == "stopped"


@pytest.mark.virtual_clock
async def test_a_crash_answers_an_inline_call_with_its_cause_and_restarts_fresh() -> None:
    source = Lingering()
    async with Runtime() as runtime:
        ref = await running(runtime, source)

        async def call() -> None:
            with pytest.raises(
                at.UnavailableError, match="crashed while the call ran: OSError: the process died"
            ):
                await ref.call("linger", {})

        with anyio.fail_after(60):  # broken, the call would wait for ever: fail instead
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                source.crash.set()
        # The call ended (its cleanup took a second) before the crashed lifespan was left.
        assert source.left_when_done == [0]
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().restarts == 1
        assert ref.statistics().in_flight == 0
        assert source.entered == 2
        assert await ref.call("echo", {"text": "again"}) == {"text": "again"}
        assert source.tasks[-1] == me()


@pytest.mark.virtual_clock
async def test_an_inline_call_that_ignores_cancellation_is_left_to_its_caller_after_the_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="amends_toolkit")
    source = Lingering()
    try:
        async with Runtime(grace=2.0) as runtime:
            ref = await running(runtime, source)
            async with anyio.create_task_group() as tasks:
                answers: list[str] = []

                async def call() -> None:
                    with pytest.raises(at.UnavailableError) as raised:
                        await ref.call("stubborn", {})
                    answers.append(str(raised.value))

                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                source.crash.set()
                try:
                    await anyio.wait_all_tasks_blocked()
                    assert source.left == 0  # the incarnation waits for its inline call
                    await anyio.sleep(2.0)  # the grace, on the virtual clock
                    await anyio.wait_all_tasks_blocked()
                    # It left, and the next incarnation knows nothing of the call still running.
                    assert source.left == 1
                    assert ref.statistics().restarts == 1
                    assert ref.statistics().in_flight == 0
                    assert await ref.call("echo", {"text": "fresh"}) == {"text": "fresh"}
                    assert answers == []
                finally:
                    source.release.set()
            assert len(answers) == 1
            assert "crashed while the call ran: OSError: the process died" in answers[0]
    finally:
        source.release.set()
    assert "actor.calls_left" in [r.getMessage() for r in caplog.records]


async def a_call_after_a_crash_waits_for_the_next_incarnation() -> None:
    source = Dying()
    async with Runtime() as runtime:
        ref = await running(runtime, source)
        with pytest.raises(at.UnavailableError, match="the process died"):
            await ref.call("die", {})
        # The crash is under way, though the actor has not run since: this call must not start
        # in the incarnation that is ending.
        assert await ref.call("echo", {"text": "next"}) == {"text": "next"}
        assert source.ran_in == [1, 2]
        assert ref.statistics().restarts == 1


async def test_a_call_made_as_its_incarnation_crashes_runs_in_the_next_one() -> None:
    await a_call_after_a_crash_waits_for_the_next_incarnation()


@pytest.mark.virtual_clock
async def test_on_trio_a_call_made_as_its_incarnation_crashes_runs_in_the_next_one() -> None:
    await a_call_after_a_crash_waits_for_the_next_incarnation()


async def test_a_caller_given_a_free_slot_still_waits_behind_a_queued_request() -> None:
    # asyncio only: it orders the tasks by when they were woken, as this test needs.
    source = Opening()
    async with Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=2)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "echo", "early")
            tasks.start_soon(ask, ref, "echo", "early")
            await anyio.wait_all_tasks_blocked()
            source.opened.set()
            await anyio.wait_all_tasks_blocked()  # two workers now wait for requests

            async def hold_then_ask(then: str | None) -> None:
                await ask(ref, "wait", "held")
                if then is not None:
                    await ask(ref, "echo", then)

            tasks.start_soon(hold_then_ask, "later")
            tasks.start_soon(hold_then_ask, None)
            await anyio.wait_all_tasks_blocked()
            assert source.texts[-2:] == ["held", "held"]  # inline, holding both slots
            source.release.set()  # wakes both holders, to run after this task
            # No room yet: `queued` goes through the mailbox; the first holder then gives its
            # slot back and asks `later` before any worker has taken `queued`.
            await ask(ref, "echo", "queued")
        assert source.texts[-2:] == ["queued", "later"]


@pytest.mark.virtual_clock
async def test_a_stop_answers_a_request_waiting_for_a_slot_and_never_runs_it() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}

    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(told, outcomes, ref, "wait", "inline")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(told, outcomes, ref, "echo", "held")
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1  # in the mailbox, a worker waiting for the slot
            await runtime.stop(ref)
    assert source.texts == ["inline"]
    assert "stopped while the call ran" in outcomes["inline"]
    assert "the source is stopped" in outcomes["held"]


class Gated(Honouring):
    """``gate`` waits until the gate of its text is opened (:meth:`open`)."""

    def __init__(self) -> None:
        super().__init__("gated")
        self.gates: dict[str, anyio.Event] = {}

    def open(self, text: str) -> None:
        self.gates.setdefault(text, anyio.Event()).set()

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "gate":
            text = str(input["text"])
            self.texts.append(text)
            self.tasks.append(me())
            await self.gates.setdefault(text, anyio.Event()).wait()
            return text
        return await super().call(tool, input)


async def test_a_worker_with_a_slot_runs_the_requests_that_wait_one_after_another() -> None:
    # When a slot comes free, the worker given it takes the requests that wait, in order, each
    # as the last one ends: no other worker is woken to take the next one a turn of the loop
    # later (which, at many callers, leaves what the calls share idle in between: a pool's
    # connections, each probed while idle).
    source = Gated()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=2)
        async with anyio.create_task_group() as tasks:
            for text in ("long", "short"):
                tasks.start_soon(ask, ref, "gate", text)  # inline, one slot each
                await anyio.wait_all_tasks_blocked()
            for text in ("a", "b", "c"):
                tasks.start_soon(ask, ref, "echo", text)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 3
            assert ref.statistics().in_flight == 2
            source.open("short")
            await anyio.wait_all_tasks_blocked()
            assert source.texts[-3:] == ["a", "b", "c"]
            ran = dict(zip(source.texts, source.tasks, strict=True))
            assert ran["a"] == ran["b"] == ran["c"]
            assert ref.statistics().queued == 0
            source.open("long")
        assert ref.statistics().in_flight == 0


async def test_requests_waiting_for_a_slot_count_against_the_mailbox_size() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, mailbox_size=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, ref, "wait", "first")  # inline, holding the slot
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "second")  # in the mailbox, which is then full
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(ask, ref, "echo", "third")  # waits to send
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().queued == 1
            assert source.texts == ["first"]
            source.release.set()
        assert source.texts == ["first", "second", "third"]


@pytest.mark.virtual_clock
async def test_a_call_that_has_not_started_by_its_deadline_is_answered_then_and_never_runs() -> (
    None
):
    # The one slot is held by a call that ignores cancellation: its caller is let go `grace`
    # after the deadline, while the calls waiting behind it (in the mailbox, and to be put in
    # it) are answered at the deadline itself, which counts from the ask.
    source = Honouring()
    answered: dict[str, tuple[float, str]] = {}

    async def call(tool: str, text: str) -> None:
        with pytest.raises(at.UnavailableError) as raised:
            await ref.call(tool, {"text": text})
        answered[text] = (anyio.current_time() - start, str(raised.value))

    async with Runtime(grace=5.0) as runtime:
        ref = await running(
            runtime, source, max_concurrency=1, mailbox_size=1, call_timeout=10.0, inline=False
        )
        start = anyio.current_time()
        try:
            with anyio.move_on_after(60.0):
                async with anyio.create_task_group() as tasks:
                    for tool, text in (
                        ("stubborn", "running"),
                        ("echo", "queued"),
                        ("echo", "outside"),
                    ):
                        tasks.start_soon(call, tool, text)
                        await anyio.wait_all_tasks_blocked()
                    assert ref.statistics().queued == 1
        finally:
            source.release.set()
        assert answered["queued"] == (
            10.0,
            "scripted: echo: no answer within the call_timeout of 10 seconds",
        )
        assert answered["outside"] == (
            10.0,
            "scripted: echo: no answer within the call_timeout of 10 seconds",
        )
        assert answered["running"] == (15.0, "scripted: the source did not stop at its deadline")
        assert await ref.call("echo", {"text": "after"}) == {"text": "after"}
    assert source.texts == ["running", "after"]
    assert ref.statistics().queued == 0


async def await_(call: Coroutine[object, object, object]) -> None:
    await call


def held_frames(call: Coroutine[object, object, object]) -> list[str]:
    """The library's frames a suspended call holds, outermost first."""
    names: list[str] = []
    awaited: object = call
    while inspect.iscoroutine(awaited):
        if "amends_toolkit" in awaited.cr_code.co_filename:
            names.append(awaited.cr_code.co_name)
        awaited = awaited.cr_await
    return names


async def test_a_call_in_flight_over_an_actor_holds_only_the_frames_of_its_layers() -> None:
    # Each call in flight holds its chain of frames, and each of its wake-ups passes them all:
    # no layer adds a frame of its own beyond these (the session's, the toolkit's, the ref's).
    source = Honouring()
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=1, mailbox_size=0)
        toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
        async with (
            at.Session(toolkit, approve=lambda _, __: True) as session,
            anyio.create_task_group() as tasks,
        ):
            inline = session.call("scripted__wait", {})
            sent = session.call("scripted__wait", {})
            waiting = session.call("scripted__wait", {})
            for call in (inline, sent, waiting):
                tasks.start_soon(functools.partial(await_, call))
                await anyio.wait_all_tasks_blocked()
            assert held_frames(inline) == ["call", "invoke", "_run_tool", "call", "_inline"]
            assert held_frames(sent) == ["call", "invoke", "_run_tool", "call", "_sent", "wait"]
            assert held_frames(waiting) == ["call", "invoke", "_run_tool", "call", "_sent", "put"]
            source.release.set()
