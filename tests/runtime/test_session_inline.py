"""A Session's call run inline by an actor: close() ends it from any task (under a shield too),
and a stop or a crash of the actor answers it; each end is told as the model and the host read
it. Then attacks: a close(), a stop, a crash or the caller's own cancellation, alone or together
(in one turn of the loop), each ends the call as the model and the host should read it, and
nothing but the Session sees how it was cut."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import ActorRef, Runtime

from .sources import Crashing, Honouring, Scripted

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


def allow(_: object, __: object) -> at.Decision:
    return "allow"


def approve_all(name: str, input: JsonObject) -> bool:
    return True


async def spawned(runtime: Runtime, source: Scripted, **options: object) -> ActorRef:
    ref = await runtime.spawn(source, **options)  # type: ignore[arg-type]
    await anyio.wait_all_tasks_blocked()
    assert ref.statistics().state == "running"
    return ref


async def toolkit_of(ref: ActorRef, decide: object = allow) -> at.Toolkit:
    return at.assemble([at.Member(ref, await ref.discover())], decide)  # type: ignore[arg-type]


async def outcome_of(session: at.Session, name: str, into: list[object]) -> None:
    """Note what the call gave, or the ClosedResourceError it raised."""
    try:
        into.append(await session.invoke(name, {}))
    except anyio.ClosedResourceError as error:
        into.append(error)


async def test_a_close_interrupts_an_inline_call_from_a_task_outside_the_block(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):  # a guard: an uninterrupted call would wait forever
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert ref.statistics().in_flight == 1
                assert source.tasks  # it runs inline: in the caller's task
        # The call ended by the session's close: no answer, nothing logged as a timeout.
        [outcome] = outcomes
        assert isinstance(outcome, anyio.ClosedResourceError)
        assert source.cancelled == 1
        assert "call.timed_out" not in caplog.text
        # Its slot was given back: the next call runs inline again, and answers.
        assert ref.statistics().in_flight == 0
        assert await ref.call("echo", {"text": "again"}) == {"text": "again"}


async def test_a_close_interrupts_an_inline_call_under_a_shield_in_the_block() -> None:
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        with anyio.fail_after(5):
            async with at.Session(await toolkit_of(ref), approve=approve_all) as session:

                async def close_once_started() -> None:
                    await anyio.wait_all_tasks_blocked()
                    session.close()

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(close_once_started)
                    with anyio.CancelScope(shield=True):
                        await outcome_of(session, "scripted__wait", outcomes)
        [outcome] = outcomes
        assert isinstance(outcome, anyio.ClosedResourceError)
        assert source.cancelled == 1


async def test_a_stop_ends_a_sessions_inline_call_with_a_result_the_model_reads() -> None:
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        async with (
            at.Session(await toolkit_of(ref), approve=approve_all) as session,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
            await anyio.wait_all_tasks_blocked()
            await runtime.stop(ref)
        [result] = outcomes
        assert isinstance(result, at.ToolResult)
        assert isinstance(result.error, at.UnavailableError)
        assert "stopped while the call ran" in str(result.error)


async def test_a_crash_ends_a_sessions_inline_call_with_its_cause() -> None:
    source = Crashing()
    source.honours_cancellation = True  # type: ignore[attr-defined]
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source, inline=True)
        with anyio.fail_after(5):  # broken, the call would wait for its cause forever
            async with (
                at.Session(await toolkit_of(ref), approve=approve_all) as session,
                anyio.create_task_group() as tasks,
            ):
                tasks.start_soon(outcome_of, session, "crashing__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
                source.crash.set()
        [result] = outcomes
        assert isinstance(result, at.ToolResult)
        assert isinstance(result.error, at.UnavailableError)
        assert "crashed while the call ran: OSError: the process died" in str(result.error)


async def test_a_close_interrupts_a_call_waiting_in_the_mailbox_from_outside_the_block() -> None:
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source, max_concurrency=1)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert ref.statistics().queued == 1  # no room inline: sent to the mailbox
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError] * 2
        assert source.started == 1  # the queued one never ran


async def test_a_close_interrupts_a_call_that_needed_approval_from_outside_the_block() -> None:
    source = Honouring()
    outcomes: list[object] = []
    asked: list[str] = []

    def approve(name: str, input: JsonObject) -> bool:
        asked.append(name)
        return True

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        toolkit = await toolkit_of(ref, lambda _, __: "approve")
        session = at.Session(toolkit, approve=approve)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.started == 1
        assert asked == ["scripted__wait"]
        [outcome] = outcomes
        assert isinstance(outcome, anyio.ClosedResourceError)
        assert source.cancelled == 1


async def test_a_session_with_on_error_hears_of_a_stop_of_its_inline_call() -> None:
    source = Honouring()
    outcomes: list[object] = []
    seen: list[tuple[str, at.ToolSourceError]] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(
            await toolkit_of(ref), approve=approve_all, on_error=lambda n, e: seen.append((n, e))
        )
        async with session, anyio.create_task_group() as tasks:
            tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
            await anyio.wait_all_tasks_blocked()
            await runtime.stop(ref)
        [result] = outcomes
        assert isinstance(result, at.ToolResult)
        [(name, error)] = seen
        assert name == "scripted__wait"
        assert error is result.error


async def test_a_close_interrupts_an_on_error_that_waits_after_an_inline_call() -> None:
    # on_error is awaited after the source's call, in the call's scope: close() ends it too.
    source = Honouring()
    outcomes: list[object] = []
    heard = anyio.Event()

    async def on_error(name: str, error: at.ToolSourceError) -> None:
        heard.set()
        await anyio.sleep_forever()

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all, on_error=on_error)
        with anyio.fail_after(5):  # broken, on_error would wait forever
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__fail", outcomes)
                await heard.wait()
        [outcome] = outcomes
        assert isinstance(outcome, anyio.ClosedResourceError)


@pytest.mark.virtual_clock
async def test_a_sessions_timeout_ends_an_inline_call_without_on_error() -> None:
    source = Honouring()
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        async with at.Session(await toolkit_of(ref), approve=approve_all, timeout=60.0) as session:
            started = anyio.current_time()
            with anyio.fail_after(120):  # broken, the call would wait forever
                result = await session.invoke("scripted__wait", {})
            assert anyio.current_time() - started == pytest.approx(60.0)
        assert isinstance(result.error, at.UnavailableError)
        assert "no answer within the Session timeout of 60 seconds" in str(result.error)
        assert source.cancelled == 1


async def test_a_session_asks_a_tool_whether_it_needs_approval_once_a_call() -> None:
    source = Honouring()
    asked: list[JsonObject] = []

    def needs_approval(input: JsonObject) -> bool:
        asked.append(input)
        return input.get("text") == "ask"

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        [definition] = [d for d in await ref.discover() if d.name == "echo"]
        tool = at.Tool(
            name="echo",
            description=definition.description,
            input_schema=definition.input_schema,
            needs_approval=needs_approval,
        )
        toolkit = at.Toolkit.from_entries(
            [at.ToolEntry(tool=tool, route=("scripted", "echo"), source=ref)]
        )
        async with at.Session(toolkit, approve=approve_all) as session:
            assert await session.call("echo", {"text": "ask"}) == {"text": "ask"}
            assert await session.call("echo", {"text": "go"}) == {"text": "go"}
        assert asked == [{"text": "ask"}, {"text": "go"}]


class Converting(Honouring):
    """``wait`` waits for ever and, cancelled, fails instead (a source that reads its
    cancellation as a failure)."""

    async def call(self, tool: str, input: JsonObject) -> at.JsonValue:
        try:
            return await super().call(tool, input)
        except anyio.get_cancelled_exc_class():
            raise at.CallFailedError(source=self.name, message="cut short") from None


async def test_an_on_error_after_a_call_the_session_cut_is_interrupted_too() -> None:
    # The call's scope was cancelled (close()) and the source failed for it: its on_error runs
    # in a scope cancelled as well, as it ran in the call's own before.
    source = Converting()
    outcomes: list[object] = []
    heard: list[str] = []

    async def on_error(name: str, error: at.ToolSourceError) -> None:
        heard.append(name)
        await anyio.sleep_forever()

    toolkit = at.assemble([at.Member(source, await source.discover())], allow)
    session = at.Session(toolkit, approve=approve_all, on_error=on_error)
    with anyio.fail_after(5):  # broken, on_error would wait forever
        async with anyio.create_task_group() as tasks, session:
            tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
            await anyio.wait_all_tasks_blocked()
    assert heard == ["scripted__wait"]
    [outcome] = outcomes
    assert isinstance(outcome, anyio.ClosedResourceError)


class CrashingSlowToLeave(Crashing):
    """A crashing source that honours cancellation, whose exit (a process's shutdown, say)
    waits for ``leave`` once the crash happened."""

    honours_cancellation = True

    def __init__(self) -> None:
        super().__init__()
        self.leave = anyio.Event()
        self.leaving = anyio.Event()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            async with super().lifespan():
                yield
        finally:
            self.leaving.set()
            with anyio.CancelScope(shield=True):
                await self.leave.wait()


class Seeing(Honouring):
    """A source whose ``wait`` notes every BaseException its call sees, as a careless source's
    ``except BaseException`` would."""

    def __init__(self) -> None:
        super().__init__("seeing")
        self.seen: list[type[BaseException]] = []

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        try:
            return await super().call(tool, input)
        except BaseException as error:
            self.seen.append(type(error))
            raise


async def test_a_close_interrupts_an_inline_call_that_waits_for_its_crashs_cause() -> None:
    # A crash cut the call short; its cause is known once the lifespan is left, which takes a
    # while. A close() meanwhile ends the call at once, as it ends any call still running.
    source = CrashingSlowToLeave()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "crashing__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
                source.crash.set()
                await source.leaving.wait()  # the call was cut, its cause is not known yet
                await anyio.wait_all_tasks_blocked()
                assert outcomes == []
                session.close()
                with anyio.CancelScope(shield=True):  # the block is cancelled by its close
                    await anyio.wait_all_tasks_blocked()
                ended = list(outcomes)
                source.leave.set()
        assert [type(outcome) for outcome in ended] == [anyio.ClosedResourceError]
        assert session._calls == set()


async def test_a_close_in_the_turn_of_a_crash_ends_an_inline_call_by_the_close() -> None:
    # The source, cancelled by the crash, closes the session before its call ends: the call was
    # still running, so it ends by the close, as a call in a scope of its own does.
    source = CrashingSlowToLeave()
    source.leave.set()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        original = source.call

        async def closing(tool: str, input: JsonObject) -> JsonValue:
            try:
                return await original(tool, input)
            except anyio.get_cancelled_exc_class():
                session.close()
                raise

        source.call = closing  # type: ignore[method-assign]
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "crashing__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                source.crash.set()
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]


@pytest.mark.parametrize("close_first", [True, False], ids=["close-first", "cancel-first"])
async def test_the_callers_own_cancellation_wins_over_a_close_in_the_same_turn(
    close_first: bool,
) -> None:
    # The caller runs outside the session's block: only its own scope and the call's are
    # cancelled. Its own cancellation propagates to its scope, never swallowed by the session.
    source = Seeing()
    caught: list[bool] = []
    leaked: list[BaseException] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        outer = anyio.CancelScope()

        async def caller() -> None:
            try:
                with outer:
                    await session.invoke("seeing__wait", {})
            except BaseException as error:  # what escapes the caller's own scope
                leaked.append(error)
                raise
            caught.append(outer.cancelled_caught)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(caller)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
                if close_first:
                    session.close()
                    outer.cancel()
                else:
                    outer.cancel()
                    session.close()
        assert leaked == []
        assert caught == [True]
        assert source.seen == [anyio.get_cancelled_exc_class()]
        assert session._calls == set()


async def test_a_source_sees_a_close_as_a_cancellation_and_nothing_else() -> None:
    source = Seeing()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "seeing__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
        assert source.seen == [anyio.get_cancelled_exc_class()]
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]
        assert session._calls == set()


async def test_closing_one_session_leaves_another_over_the_same_toolkit_running() -> None:
    source = Honouring()
    first: list[object] = []
    second: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        toolkit = await toolkit_of(ref)
        outer = at.Session(toolkit, approve=approve_all)
        inner = at.Session(toolkit, approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, outer, inner:
                tasks.start_soon(outcome_of, outer, "scripted__wait", first)
                tasks.start_soon(outcome_of, inner, "scripted__wait", second)
                await anyio.wait_all_tasks_blocked()
                assert ref.statistics().in_flight == 2
                outer.close()
                with anyio.CancelScope(shield=True):  # outer's block is cancelled
                    await anyio.wait_all_tasks_blocked()
                    assert [type(o) for o in first] == [anyio.ClosedResourceError]
                    assert second == []
                    assert ref.statistics().in_flight == 1
                    source.release.set()
                    await anyio.wait_all_tasks_blocked()
        [result] = second
        assert isinstance(result, at.ToolResult)
        assert result.value == "released"
        assert outer._calls == inner._calls == set()


async def test_a_close_and_a_stop_in_one_turn_end_the_call_by_the_close() -> None:
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                session.close()
                with anyio.CancelScope(shield=True):  # the block is cancelled by its close
                    await runtime.stop(ref)
        # The session's cancellation is the outer one, and it wins (both backends).
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]


async def test_a_close_of_a_call_ignoring_cancellation_gives_the_late_answer() -> None:
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source, inline=True)
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__stubborn", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
                session.close()
                with anyio.CancelScope(shield=True):  # the block is cancelled by its close
                    await anyio.wait_all_tasks_blocked()
                    assert outcomes == []  # it ignores the close
                    source.release.set()
                    await anyio.wait_all_tasks_blocked()
        [outcome] = outcomes
        assert isinstance(outcome, at.ToolResult)
        assert outcome.value == "late"
        assert session._calls == set()


async def test_an_approval_that_raises_reaches_the_sessions_caller() -> None:
    source = Honouring()

    def approve(name: str, input: JsonObject) -> bool:
        raise LookupError("the person is away")

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        toolkit = await toolkit_of(ref, lambda _, __: "approve")
        async with at.Session(toolkit, approve=approve) as session:
            with pytest.raises(LookupError, match="away"):
                await session.invoke("scripted__echo", {"text": "x"})
            assert session._calls == set()
            denied = at.Session(toolkit, approve=lambda n, i: False)
            async with denied:
                result = await denied.invoke("scripted__echo", {"text": "x"})
            assert result.value["code"] == "ApprovalDenied"  # type: ignore[index,call-overload]
        assert source.calls == []


async def test_a_close_while_the_approval_waits_ends_the_call_before_the_source() -> None:
    source = Honouring()
    outcomes: list[object] = []
    asking = anyio.Event()

    async def approve(name: str, input: JsonObject) -> bool:
        asking.set()
        await anyio.sleep_forever()
        return True

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        toolkit = await toolkit_of(ref, lambda _, __: "approve")
        session = at.Session(toolkit, approve=approve)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await asking.wait()
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]
        assert source.calls == []
        assert session._calls == set()
        assert ref.statistics().in_flight == 0


@pytest.mark.virtual_clock
async def test_a_sessions_inline_call_past_call_timeout_is_answered_as_timed_out() -> None:
    # A call with a deadline keeps a scope of its own: the Session's is entered around it.
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source, call_timeout=60.0)
        async with at.Session(await toolkit_of(ref), approve=approve_all) as session:
            started = anyio.current_time()
            with anyio.fail_after(120):
                result = await session.invoke("scripted__wait", {})
            assert anyio.current_time() - started == pytest.approx(60.0)
            assert isinstance(result.error, at.UnavailableError)
            assert "no answer within the call_timeout" in str(result.error)
            assert source.tasks  # it ran inline
        # And a close() before its deadline ends it by the close.
        session = at.Session(await toolkit_of(ref), approve=approve_all)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]
        assert source.cancelled == 2


async def test_a_close_interrupts_an_inline_call_of_a_session_that_hears_progress() -> None:
    # With on_progress the call runs under listening(), which the close passes through.
    source = Honouring()
    outcomes: list[object] = []
    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(
            await toolkit_of(ref), approve=approve_all, on_progress=lambda name, progress: None
        )
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks, session:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
        assert [type(outcome) for outcome in outcomes] == [anyio.ClosedResourceError]
        assert source.cancelled == 1
        assert session._calls == set()


async def test_a_stop_of_an_inline_call_lets_an_awaited_on_error_run_to_its_end() -> None:
    # The actor cancelled the call's scope, not the session: its on_error is not cut.
    source = Honouring()
    outcomes: list[object] = []
    heard: list[str] = []

    async def on_error(name: str, error: at.ToolSourceError) -> None:
        await anyio.lowlevel.checkpoint()
        heard.append(name)

    async with Runtime() as runtime:
        ref = await spawned(runtime, source)
        session = at.Session(await toolkit_of(ref), approve=approve_all, on_error=on_error)
        with anyio.fail_after(5):
            async with session, anyio.create_task_group() as tasks:
                tasks.start_soon(outcome_of, session, "scripted__wait", outcomes)
                await anyio.wait_all_tasks_blocked()
                assert source.tasks  # inline
                await runtime.stop(ref)
        [result] = outcomes
        assert isinstance(result, at.ToolResult)
        assert isinstance(result.error, at.UnavailableError)
        assert heard == ["scripted__wait"]
