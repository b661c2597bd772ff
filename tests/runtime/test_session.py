"""A Session: the calls it runs, asked and timed, and a call run inline by an actor: close() ends it
from any task (under a shield too), and a stop or a crash of the actor answers it; each end is
told as the model and the host read it. Then attacks: a close(), a stop, a crash or the caller's
own cancellation, alone or together (in one turn of the loop), each ends the call as the model
and the host should read it, and nothing but the Session sees how it was cut."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._progress import listener, listening, report
from amends_toolkit.runtime import ActorRef, Runtime, Tool, ToolEntry, Toolkit, asking

from .sources import Crashing, Honouring, Scripted
from .toolkit_sources import CLOSED, OPEN, Gate, Recording, allow_all, define, raising

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


class Person:
    """An approver that records what it was asked and answers as told."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[tuple[str, JsonObject]] = []

    async def __call__(self, name: str, input: JsonObject) -> bool:
        self.asked.append((name, input))
        return self.answer


def never_asked(name: str, input: JsonObject) -> bool:
    raise AssertionError(f"approval asked for {name}")


def policy_toolkit(source: Recording) -> at.Toolkit:
    decisions: dict[str, at.Decision] = {"read": "allow", "write": "approve"}
    return at.assemble(
        [at.Member(source, [define("read"), define("write", CLOSED)])],
        lambda _, d: decisions[d.name],
    )


async def test_a_tool_that_needs_approval_runs_once_approved() -> None:
    source = Recording("db")
    person = Person(answer=True)
    async with at.Session(policy_toolkit(source), approve=person) as session:
        answer = await session.call("db__write", {"id": 1})
    assert answer == {"source": "db", "tool": "write", "input": {"id": 1}}
    assert person.asked == [("db__write", {"id": 1})]
    assert source.calls == [("write", {"id": 1})]


async def test_a_refusal_is_a_result_the_model_reads_and_the_tool_does_not_run() -> None:
    source = Recording("db")
    async with at.Session(policy_toolkit(source), approve=Person(answer=False)) as session:
        result = await session.invoke("db__write", {"id": 1})
    assert result.value == {
        "isFailure": True,
        "code": "ApprovalDenied",
        "message": "A person did not approve this call; it did not run.",
        "retryable": False,
    }
    assert result.error is None
    assert source.calls == []


@pytest.mark.parametrize("undecided", [at.ApprovalRequired, at.ApprovalTimedOut])
async def test_an_approve_that_got_no_decision_is_its_own_failure_not_a_refusal(
    undecided: type[at.NoApproval],
) -> None:
    source = Recording("db")

    async def nobody(name: str, input: JsonObject) -> bool:
        raise undecided("the host's reason, never the model's: http://10.0.0.7/approvals")

    async with at.Session(policy_toolkit(source), approve=nobody) as session:
        result = await session.invoke("db__write", {"id": 1})
    assert result.value == {
        "isFailure": True,
        "code": undecided.__name__,
        "message": undecided.default_message,
        "retryable": False,
    }
    assert "10.0.0.7" not in str(result.value)
    assert source.calls == []


async def test_a_synchronous_approver_is_called() -> None:
    source = Recording("db")
    async with at.Session(policy_toolkit(source), approve=lambda _, __: False) as session:
        refusal = at.Failure.from_json(await session.call("db__write", {"id": 1}))
    assert refusal is not None
    assert refusal.code == "ApprovalDenied"


async def test_allowed_tools_and_refused_inputs_ask_no_one() -> None:
    source = Recording("db")
    async with at.Session(policy_toolkit(source), approve=never_asked) as session:
        await session.call("db__read", {})
        refusal = at.Failure.from_json(await session.call("db__write", {"id": "one"}))
        missing = at.Failure.from_json(await session.call("db__drop", {}))
    assert refusal is not None
    assert refusal.code == "InvalidInputError"
    assert missing is not None
    assert missing.code == "NotFoundError"
    assert source.calls == [("read", {})]


async def test_approval_may_depend_on_the_input() -> None:
    async def handler(input: JsonObject) -> JsonValue:
        return "paid"

    tool = at.Tool(
        name="pay",
        description="",
        input_schema={"type": "object", "properties": {"amount": {"type": "integer"}}},
        needs_approval=lambda input: input["amount"] > 100,  # type: ignore[operator]
    )
    toolkit = at.Toolkit.from_entries([at.ToolEntry(tool=tool, handler=handler)])
    person = Person(answer=False)
    async with at.Session(toolkit, approve=person) as session:
        assert await session.call("pay", {"amount": 5}) == "paid"
        assert await session.call("pay", {"amount": 500}) != "paid"
    assert person.asked == [("pay", {"amount": 500})]


async def test_calls_run_concurrently() -> None:
    gates = {"a": Gate("A"), "b": Gate("B")}
    toolkit = at.assemble(
        [at.Member(Recording("s", dict(gates)), [define("a"), define("b")])], allow_all
    )
    answers: dict[str, JsonValue] = {}
    async with at.Session(toolkit, approve=never_asked) as session:

        async def run(name: str) -> None:
            answers[name] = await session.call(f"s__{name}", {})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run, "a")
            tasks.start_soon(run, "b")
            await gates["a"].started.wait()
            await gates["b"].started.wait()
            gates["b"].release.set()
            gates["a"].release.set()
    assert answers == {"a": "A", "b": "B"}


async def test_the_host_sees_the_error_behind_a_failure() -> None:
    expired = at.AuthenticationError(source="github", message="401 from https://api/x")
    source = Recording("github", {"issues": raising(expired), "repos": raising(KeyError("k"))})
    toolkit = at.assemble(
        [at.Member(source, [define("issues"), define("repos"), define("me")])], allow_all
    )
    seen: list[tuple[str, at.ToolSourceError]] = []

    async def on_error(name: str, error: at.ToolSourceError) -> None:
        seen.append((name, error))

    async with at.Session(toolkit, approve=never_asked, on_error=on_error) as session:
        answer = await session.call("github__issues", {})
        await session.call("github__repos", {})
        await session.call("github__me", {})
        await session.call("github__nothing", {})
        await session.call("github__me", [])
    assert answer == expired.to_failure().to_json()
    assert [name for name, _ in seen] == ["github__issues", "github__repos"]
    assert seen[0][1] is expired
    assert isinstance(seen[1][1], at.UnknownError)
    assert isinstance(seen[1][1].__cause__, KeyError)


async def test_a_synchronous_error_hook_is_called() -> None:
    seen: list[str] = []
    source = Recording("s", {"t": raising(at.UnavailableError(source="s", retry_after=3.0))})
    toolkit = at.assemble([at.Member(source, [define("t")])], allow_all)
    async with at.Session(
        toolkit, approve=never_asked, on_error=lambda _, error: seen.append(error.reason)
    ) as session:
        failure = at.Failure.from_json(await session.call("s__t", {}))
    assert failure == at.Failure(
        code="UnavailableError",
        message=at.UnavailableError.default_message,
        retryable=True,
    )
    assert seen == ["UnavailableError"]


@pytest.mark.virtual_clock
async def test_a_call_past_the_timeout_is_cancelled_and_read_as_unavailable() -> None:
    gate = Gate()
    toolkit = at.assemble([at.Member(Recording("slow", {"t": gate}), [define("t")])], allow_all)
    seen: list[at.ToolSourceError] = []
    async with at.Session(
        toolkit, approve=never_asked, on_error=lambda _, e: seen.append(e), timeout=60.0
    ) as session:
        started = anyio.current_time()
        failure = at.Failure.from_json(await session.call("slow__t", {}))
        elapsed = anyio.current_time() - started
    assert elapsed == pytest.approx(60.0)
    assert failure is not None
    assert (failure.code, failure.retryable) == ("UnavailableError", True)
    assert gate.cancelled == 1
    [error] = seen
    assert isinstance(error, at.UnavailableError)
    assert error.source == "slow"
    assert "Session timeout of 60 seconds" in error.message


@pytest.mark.virtual_clock
async def test_waiting_for_approval_does_not_count_against_the_timeout() -> None:
    async def slow_person(name: str, input: JsonObject) -> bool:
        await anyio.sleep(600)  # a person takes ten minutes on the virtual clock
        return True

    toolkit = at.assemble([at.Member(Recording("s"), [define("t")])], lambda _, __: "approve")
    async with at.Session(toolkit, approve=slow_person, timeout=1.0) as session:
        answer = await session.call("s__t", {})
    assert answer == {"source": "s", "tool": "t", "input": {}}


@pytest.mark.virtual_clock
async def test_a_call_within_the_timeout_gives_its_answer() -> None:
    async def takes_a_while(input: JsonObject) -> JsonValue:
        await anyio.sleep(59)
        return "done"

    toolkit = at.assemble(
        [at.Member(Recording("s", {"t": takes_a_while}), [define("t")])], allow_all
    )
    async with at.Session(toolkit, approve=never_asked, timeout=60.0) as session:
        assert await session.call("s__t", {}) == "done"


async def test_closing_the_session_interrupts_calls_still_running() -> None:
    gate = Gate()
    toolkit = at.assemble([at.Member(Recording("s", {"t": gate}), [define("t")])], allow_all)
    answers: list[JsonValue] = []
    after_close: list[str] = []

    async with at.Session(toolkit, approve=never_asked) as session:
        async with anyio.create_task_group() as tasks:

            async def run() -> None:
                answers.append(await session.call("s__t", {}))

            tasks.start_soon(run)
            tasks.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert gate.running == 2
            session.close()
            with anyio.fail_after(5):  # a guard: without the close this would wait forever
                await anyio.sleep_forever()
        after_close.append("unreachable")
    assert answers == []
    assert gate.cancelled == 2
    assert after_close == []


async def test_a_turn_interrupted_from_another_task_ends_its_block() -> None:
    gate = Gate()
    toolkit = at.assemble([at.Member(Recording("s", {"t": gate}), [define("t")])], allow_all)
    answers: list[JsonValue] = []
    sessions: list[at.Session] = []

    async def turn() -> None:
        async with at.Session(toolkit, approve=never_asked) as session:
            sessions.append(session)
            answers.append(await session.call("s__t", {}))

    with anyio.fail_after(5):  # a guard: an uninterrupted call would wait forever
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(turn)
            await gate.started.wait()
            sessions[0].close()
    assert answers == []
    assert gate.cancelled == 1


async def test_a_call_outside_the_block_is_interrupted_when_the_session_closes() -> None:
    gate = Gate()
    toolkit = at.assemble([at.Member(Recording("s", {"t": gate}), [define("t")])], allow_all)
    outcomes: list[object] = []
    session = at.Session(toolkit, approve=never_asked)

    async def caller() -> None:
        try:
            outcomes.append(await session.call("s__t", {}))
        except anyio.ClosedResourceError as error:
            outcomes.append(error)

    with anyio.fail_after(5):  # a guard: an uninterrupted call would wait forever
        async with anyio.create_task_group() as tasks, session:
            tasks.start_soon(caller)
            await gate.started.wait()
    assert gate.cancelled == 1
    [outcome] = outcomes
    assert isinstance(outcome, anyio.ClosedResourceError)


async def test_a_closed_session_runs_nothing() -> None:
    source = Recording("s")
    toolkit = at.assemble([at.Member(source, [define("t")])], allow_all)
    session = at.Session(toolkit, approve=never_asked)
    with pytest.raises(RuntimeError, match="enter the Session"):
        await session.call("s__t", {})
    async with session:
        pass
    with pytest.raises(anyio.ClosedResourceError):
        await session.call("s__t", {})
    with pytest.raises(RuntimeError, match="entered only once"):
        async with session:
            pass
    assert source.calls == []


async def test_a_session_closed_before_it_is_entered_runs_nothing() -> None:
    session = at.Session(at.assemble([], allow_all), approve=never_asked)
    session.close()
    with pytest.raises(RuntimeError, match="not after close"):
        async with session:
            pass


async def test_an_error_in_the_block_is_not_swallowed() -> None:
    toolkit = at.assemble([], allow_all)
    with pytest.raises(LookupError):
        async with at.Session(toolkit, approve=never_asked):
            raise LookupError


async def test_a_cancelled_caller_cancels_its_call_and_gets_no_result() -> None:
    gate = Gate()
    toolkit = at.assemble(
        [at.Member(Recording("s", {"t": gate}), [define("t"), define("echo")])], allow_all
    )
    answers: list[JsonValue] = []
    async with at.Session(toolkit, approve=never_asked) as session:

        async def run() -> None:
            answers.append(await session.call("s__t", {}))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await gate.started.wait()
            tasks.cancel_scope.cancel()
        # The session runs calls still: only the caller's own call was cancelled.
        assert await session.call("s__echo", {}) == {"source": "s", "tool": "echo", "input": {}}
    assert answers == []
    assert gate.cancelled == 1


@pytest.mark.parametrize("timeout", [0, -1.0, float("inf"), float("nan")])
def test_a_timeout_that_is_no_positive_number_is_a_clear_error(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        at.Session(at.assemble([], allow_all), approve=never_asked, timeout=timeout)


class Reporting:
    """A source whose ``work`` reports two steps to whoever listens, and says whether anyone did."""

    name = "job"

    async def discover(self) -> list[at.ToolDefinition]:
        return [define("work")]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        on_progress = listener()
        if on_progress is not None:
            for step in (1, 2):
                await report(on_progress, at.Progress(progress=step, total=2, message=f"{step}"))
        return {"listened": on_progress is not None}


@pytest.mark.parametrize("inline", [False, True])
async def test_progress_crosses_the_actor_to_the_session_that_asked_for_it(inline: bool) -> None:
    told: list[tuple[str, at.Progress]] = []

    async def on_progress(name: str, progress: at.Progress) -> None:
        told.append((name, progress))

    async with at.Runtime() as runtime:
        ref = await runtime.spawn(Reporting(), inline=inline)
        await anyio.wait_all_tasks_blocked()  # running: with room, a call runs inline
        kit = at.assemble([at.Member(ref, await ref.discover())], allow_all)
        async with at.Session(kit, approve=never_asked, on_progress=on_progress) as session:
            assert await session.call("job__work", {}) == {"listened": True}
        async with at.Session(kit, approve=never_asked) as quiet:
            assert await quiet.call("job__work", {}) == {"listened": False}
        assert await kit.call("job__work", {}) == {"listened": False}
    assert told == [
        ("job__work", at.Progress(progress=1, total=2, message="1")),
        ("job__work", at.Progress(progress=2, total=2, message="2")),
    ]


async def test_a_session_without_on_progress_hides_the_listener_of_the_call_around_it() -> None:
    # A quiet session's call made while an outer call is listened to (a tool that runs a tool)
    # tells the outer listener nothing; with no listener around, it sets none either.
    told: list[at.Progress] = []
    kit = at.source_toolkit(Reporting(), [define("work")])
    async with at.Session(kit, approve=never_asked) as quiet:
        with listening(told.append):
            assert await quiet.call("work", {}) == {"listened": False}
            assert listener() is not None
        assert await quiet.call("work", {}) == {"listened": False}
        assert listener() is None
    assert told == []


class Asking:
    """A source that says whether its call could ask the Session's person."""

    name = "src"

    async def discover(self) -> list[at.ToolDefinition]:
        return [define("look")]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return {"asks": asking() is not None}


async def test_a_sessions_asking_reaches_a_tools_handler_and_not_a_sources_call() -> None:
    async def handler(input: JsonObject) -> JsonValue:
        return {"asks": asking() is not None}

    source = Asking()
    entries = [
        *at.source_toolkit(source, await source.discover()).entries(),
        ToolEntry(
            tool=Tool(name="own", description="Its own.", input_schema=OPEN), handler=handler
        ),
    ]
    kit = Toolkit.from_entries(entries)
    for timeout in (None, 5.0):
        async with at.Session(kit, approve=never_asked, timeout=timeout) as session:
            assert await session.call("own", {}) == {"asks": True}
            assert await session.call("look", {}) == {"asks": False}
    assert await kit.call("own", {}) == {"asks": False}


async def test_a_listener_that_fails_does_not_fail_the_call() -> None:
    def broken(name: str, progress: at.Progress) -> None:
        raise RuntimeError("the host's listener broke")

    async with at.Session(
        at.source_toolkit(Reporting(), [define("work")]), approve=never_asked, on_progress=broken
    ) as session:
        assert await session.call("work", {}) == {"listened": True}


@pytest.mark.parametrize("answer", ["yes", None, 1])
async def test_an_approve_that_gives_no_bool_is_a_clear_error(answer: object) -> None:
    source = Recording("db")

    def approve(name: str, input: JsonObject) -> bool:
        return answer  # type: ignore[return-value]

    async with at.Session(policy_toolkit(source), approve=approve) as session:
        with pytest.raises(TypeError, match=r"must give True .* or False"):
            await session.call("db__write", {"id": 1})
    assert source.calls == []


async def test_a_session_and_the_toolkit_run_a_call_the_same_way() -> None:
    source = Recording("db")
    toolkit = policy_toolkit(source)
    async with at.Session(toolkit, approve=never_asked) as session:
        calls: list[tuple[str, JsonObject]] = [
            ("db__read", {"id": 1}),
            ("db__nope", {}),
            ("read", {}),
        ]
        for name, input in calls:
            assert await session.call(name, input) == await toolkit.call(name, input)


class Gated(Reporting):
    """Reporting, whose ``work`` reports its text, then waits for ``release`` before its steps."""

    honours_cancellation = True

    def __init__(self) -> None:
        self.release = anyio.Event()

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        on_progress = listener()
        if on_progress is not None:
            await report(on_progress, at.Progress(progress=0, message=str(input.get("who"))))
        await self.release.wait()
        return await super().call(tool, input)


async def test_two_sessions_calling_at_once_each_hear_only_their_calls_progress() -> None:
    told: dict[str, list[str | None]] = {"a": [], "b": []}

    source = Gated()
    async with at.Runtime() as runtime:
        # One slot: `a` runs inline, `b` goes through the mailbox and waits for the slot.
        ref = await runtime.spawn(source, max_concurrency=1)
        await anyio.wait_all_tasks_blocked()
        kit = at.assemble([at.Member(ref, await ref.discover())], allow_all)
        async with anyio.create_task_group() as tasks:
            for who in ("a", "b"):

                async def call(who: str = who) -> None:
                    def hear(name: str, progress: at.Progress) -> None:
                        told[who].append(progress.message)

                    async with at.Session(kit, approve=never_asked, on_progress=hear) as session:
                        assert await session.call("job__work", {"who": who}) == {"listened": True}

                tasks.start_soon(call)
                await anyio.wait_all_tasks_blocked()
            assert ref.statistics().in_flight == 1
            assert ref.statistics().queued == 1
            source.release.set()
    assert told == {"a": ["a", "1", "2"], "b": ["b", "1", "2"]}


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
