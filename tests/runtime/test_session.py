from __future__ import annotations

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._progress import listener, listening, report
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit, asking

from .toolkit_sources import CLOSED, OPEN, Gate, Recording, allow_all, define, raising

# Both backends: a session is a cancel scope, and the two deliver cancellation differently.
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
