from __future__ import annotations

import logging

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Restart, Runtime, ToolSource

from .sources import Crashing, Scripted

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
