"""The checks: one plain async function per requirement a source meets.

Each takes a :class:`~amends_toolkit.conformance.Fixture`, opens the sources it needs one after
another, and raises ``AssertionError`` with a message naming what the source did wrong (or
:class:`~amends_toolkit.conformance.Skipped` when the fixture has no system in the state it
needs). They run on the live clock and wait a few seconds at most for anything.
"""

from __future__ import annotations

import contextlib
import functools
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._catalog import dump, load
from amends_toolkit._definitions import Decision, ToolDefinition
from amends_toolkit._errors import (
    AuthenticationError,
    CallFailedError,
    CatalogError,
    Failure,
    NameClash,
    ToolSourceError,
    UnavailableError,
    UnknownError,
)
from amends_toolkit.conformance._fixture import STATES, Fixture, Skipped, State
from amends_toolkit.conformance._support import (
    ANSWER_WITHIN,
    SEE_WITHIN,
    Outcome,
    call,
    discover,
    expect_answer,
    expect_definitions,
    expect_error,
    fail,
    opened,
    short,
    text_of,
    wait_until,
)
from amends_toolkit.runtime import Member, Runtime, assemble, source_toolkit

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime import Toolkit, ToolSource

__all__ = (
    "CHECKS",
    "Check",
    "assembled_by_assemble",
    "concurrent_calls_get_their_own_answers",
    "definitions_are_stored_as_json",
    "definitions_are_the_same_each_time",
    "definitions_have_distinct_names",
    "down_is_unavailable",
    "failing_is_call_failed",
    "interrupted_call_stops",
    "model_reads_no_secret",
    "refused_credentials_are_authentication_errors",
    "runs_in_a_runtime",
    "toolkit_reads_failures_as_results",
    "tools_run_again_after_a_failure",
    "tools_run_by_the_names_they_list",
    "unknown_tool_is_an_error_of_the_source",
    "unreachable_is_unavailable",
)

Check = Callable[[Fixture], Awaitable[None]]
"""A check: raises ``AssertionError`` naming what the source did wrong, or returns."""

TOOLS = ("echo", "failing", "blocking")
UNKNOWN_TOOL = "conformance_no_such_tool"


def _check(function: Check) -> Check:
    """``function``, raising a plain ``AssertionError`` where a task group (of the check or of the
    fixture) wraps its failure in an exception group."""

    @functools.wraps(function)
    async def check(fixture: Fixture) -> None:
        try:
            await function(fixture)
        except BaseExceptionGroup as group:
            failures, others = group.split((AssertionError, Skipped))
            if others is not None or failures is None:
                raise
            leaves = _leaves(failures)
            if all(isinstance(leaf, Skipped) for leaf in leaves):
                raise leaves[0] from group
            raise AssertionError(
                "; ".join(str(leaf) for leaf in leaves if isinstance(leaf, AssertionError))
            ) from group

    return check


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    leaves: list[BaseException] = []
    for error in group.exceptions:
        leaves.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return leaves


def _inputs() -> tuple[tuple[str, JsonObject], ...]:
    return (("echo", {"text": _text()}), ("failing", {}))


def _text() -> str:
    # Unique, so that one answer can never hold another's text by accident.
    return f"conformance-{uuid.uuid4().hex}"


async def _definitions(source: ToolSource, *, what: str = "discover()") -> list[ToolDefinition]:
    return expect_definitions(await discover(source, what=what), what=what)


async def _echo(source: ToolSource, text: str, *, what: str = "call('echo')") -> None:
    answer = expect_answer(await call(source, "echo", {"text": text}, what=what), what=what)
    if text not in text_of(answer):
        fail(f"{what} with the text {text!r} answered {short(answer)}, which does not hold it")


@_check
async def definitions_are_stored_as_json(fixture: Fixture) -> None:
    """Lists definitions a catalog can store as JSON: ``at.catalog.dump``, JSON text, and
    ``at.catalog.load`` give them back equal, each with an object schema."""
    async with opened(fixture, "working") as source:
        definitions = await _definitions(source)
    for definition in definitions:
        if definition.input_schema.get("type") != "object":
            fail(
                f"the input schema of {definition.name!r} has no object root "
                f"(type {definition.input_schema.get('type')!r})"
            )
    try:
        text = json.dumps(dump(definitions), allow_nan=False)
    except (TypeError, ValueError) as error:
        fail(f"the catalog cannot store the definitions as JSON: {error}")
    try:
        loaded = load(list[ToolDefinition], json.loads(text))
    except CatalogError as error:
        fail(f"the catalog cannot read back the definitions it stored: {error}")
    for before, after in zip(definitions, loaded, strict=True):
        if before != after:
            fail(
                f"the definition of {before.name!r} changes when stored and read back: "
                f"{short(before)} became {short(after)}"
            )


@_check
async def definitions_have_distinct_names(fixture: Fixture) -> None:
    """Lists each tool under a name no other tool of the source has."""
    async with opened(fixture, "working") as source:
        names = [definition.name for definition in await _definitions(source)]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        fail(f"discover() lists more than one tool named {', '.join(map(repr, repeated))}")


@_check
async def definitions_are_the_same_each_time(fixture: Fixture) -> None:
    """Lists the same definitions each time it is asked, while the system does not change."""
    async with opened(fixture, "working") as source:
        first = await _definitions(source)
        for attempt in (2, 3):
            again = await _definitions(source, what=f"discover() the {attempt}. time")
            if again != first:
                fail(
                    f"discover() the {attempt}. time lists {short(dump(again))}, "
                    f"but the first time {short(dump(first))}"
                )


@_check
async def tools_run_by_the_names_they_list(fixture: Fixture) -> None:
    """Lists ``echo``, ``failing`` and ``blocking``, and runs ``echo`` by the name it lists,
    answering JSON that holds the text it was given."""
    async with opened(fixture, "working") as source:
        names = {definition.name for definition in await _definitions(source)}
        missing = [tool for tool in TOOLS if tool not in names]
        if missing:
            fail(f"discover() does not list {', '.join(missing)} (it lists {sorted(names)})")
        await _echo(source, _text())


@_check
async def concurrent_calls_get_their_own_answers(fixture: Fixture) -> None:
    """Answers calls that run together each with its own answer."""
    texts = [_text() for _ in range(8)]
    answers: dict[str, Outcome] = {}
    async with opened(fixture, "working") as source:

        async def echo(text: str) -> None:
            answers[text] = await call(source, "echo", {"text": text}, what="call('echo')")

        async with anyio.create_task_group() as tasks:
            for text in texts:
                tasks.start_soon(echo, text)
    for text in texts:
        what = f"call('echo') with {text!r}, among {len(texts)} at once,"
        answer = text_of(expect_answer(answers[text], what=what))
        if text not in answer:
            fail(f"{what} answered {short(answer)}, which does not hold its text")
        others = [other for other in texts if other != text and other in answer]
        if others:
            fail(f"{what} answered {short(answer)}, which holds the text of another call")


@_check
async def failing_is_call_failed(fixture: Fixture) -> None:
    """Fails a tool that reports its failure as ``CallFailedError`` naming the source."""
    async with opened(fixture, "working") as source:
        what = "call('failing')"
        error = expect_error(
            await call(source, "failing", {}, what=what), CallFailedError, source, what=what
        )
    if not error.model_message.strip():
        fail(f"{what} raised CallFailedError with nothing for the model to read")


@_check
async def unknown_tool_is_an_error_of_the_source(fixture: Fixture) -> None:
    """Fails a tool it does not have as a ``ToolSourceError`` naming the source, not a defect
    (an exception of another kind, or ``UnknownError``, which the runtime reads as one)."""
    async with opened(fixture, "working") as source:
        what = f"call({UNKNOWN_TOOL!r}), a tool the source does not have,"
        error = expect_error(
            await call(source, UNKNOWN_TOOL, {}, what=what), ToolSourceError, source, what=what
        )
    if isinstance(error, UnknownError):
        fail(f"{what} raised UnknownError, a defect, where an error of the source is due")


@_check
async def tools_run_again_after_a_failure(fixture: Fixture) -> None:
    """Runs tools again after a failed call, an unknown tool and an interrupted call."""
    async with opened(fixture, "working") as source:
        await call(source, "failing", {}, what="call('failing')")
        await _echo(source, _text(), what="call('echo') after call('failing') failed")
        await call(source, UNKNOWN_TOOL, {}, what=f"call({UNKNOWN_TOOL!r})")
        await _echo(source, _text(), what=f"call('echo') after call({UNKNOWN_TOOL!r}) failed")
        await _interrupt_quietly(fixture, source)
        await _echo(source, _text(), what="call('echo') after call('blocking') was interrupted")
        await _definitions(source, what="discover() after failed calls")


async def _interrupt_quietly(fixture: Fixture, source: ToolSource) -> None:
    # interrupted_call_stops reports what a source does wrong here; this only interrupts a call.
    before = fixture.blocking_calls()

    async def blocking() -> None:
        with contextlib.suppress(Exception):
            await source.call("blocking", {})

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(blocking)
        await wait_until(lambda: fixture.blocking_calls().arrived > before.arrived)
        tasks.cancel_scope.cancel()


@_check
async def interrupted_call_stops(fixture: Fixture) -> None:
    """Stops a call that is interrupted: the call ends at once without an answer or an error
    (cancellation is no failure), and the system sees it stop."""
    async with opened(fixture, "working") as source:
        await _interrupt_blocking(fixture, source, what="call('blocking')")


async def _interrupt_blocking(fixture: Fixture, source: ToolSource, *, what: str) -> None:
    before = fixture.blocking_calls()
    after_cancel: list[str] = []
    ended = anyio.Event()
    scope = anyio.CancelScope()

    async def blocking() -> None:
        try:
            with scope:
                try:
                    value = await source.call("blocking", {})
                except Exception as error:  # noqa: BLE001 - reported below as the source's fault
                    after_cancel.append(Outcome(error=error).describe())
                else:
                    after_cancel.append(Outcome(value=value).describe())
        finally:
            ended.set()

    problem: str | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(blocking)
        arrived = await wait_until(lambda: fixture.blocking_calls().arrived > before.arrived)
        scope.cancel()
        if not arrived:
            problem = f"{what} never reached the system within {SEE_WITHIN:g} s" + (
                f" (it {after_cancel[0]})" if after_cancel else ""
            )
        elif after_cancel:
            problem = f"{what} should not answer, but it {after_cancel[0]} before it was cancelled"
        else:
            with anyio.move_on_after(SEE_WITHIN):
                await ended.wait()
            if not ended.is_set():
                problem = f"{what} still runs {SEE_WITHIN:g} s after it was cancelled"
    if problem is not None:
        fail(problem)
    if after_cancel:
        fail(f"{what} was cancelled, and then it {after_cancel[0]}: cancellation is no failure")
    if not await wait_until(lambda: fixture.blocking_calls().stopped > before.stopped):
        fail(f"{what} was cancelled, but the system still runs it {SEE_WITHIN:g} s later")


async def _refused(
    fixture: Fixture,
    state: State,
    reason: type[ToolSourceError],
    *,
    retryable: bool,
) -> None:
    async with opened(fixture, "working") as source:
        working = await _definitions(source)
    async with opened(fixture, state) as source:
        what = f"discover() when the system is {state}"
        outcome = await discover(source, what=what)
        listed = outcome.value
        if outcome.error is not None or not isinstance(listed, Sequence) or list(listed) != working:
            # A source that asks the system for its tools fails as a call does.
            _expect_reason(outcome, reason, source, retryable=retryable, what=what)
        for tool, input in _inputs():
            what = f"call({tool!r}) when the system is {state}"
            outcome = await call(source, tool, input, what=what)
            _expect_reason(outcome, reason, source, retryable=retryable, what=what)


def _expect_reason(
    outcome: Outcome,
    reason: type[ToolSourceError],
    source: ToolSource,
    *,
    retryable: bool,
    what: str,
) -> None:
    error = expect_error(outcome, reason, source, what=what)
    if error.retryable is not retryable:
        fail(f"{what} raised {error.reason} with retryable={error.retryable!r}, not {retryable}")


@_check
async def refused_credentials_are_authentication_errors(fixture: Fixture) -> None:
    """Fails with ``AuthenticationError``, not retryable, when the system refuses its credentials,
    for discover too when the source asks the system for its tools."""
    await _refused(fixture, "unauthorized", AuthenticationError, retryable=False)


@_check
async def down_is_unavailable(fixture: Fixture) -> None:
    """Fails with ``UnavailableError``, retryable, when the system says it is down, for discover
    too when the source asks the system for its tools."""
    await _refused(fixture, "unavailable", UnavailableError, retryable=True)


@_check
async def unreachable_is_unavailable(fixture: Fixture) -> None:
    """Fails with ``UnavailableError``, retryable, when nothing answers at the system's address,
    for discover too when the source asks the system for its tools."""
    await _refused(fixture, "unreachable", UnavailableError, retryable=True)


@_check
async def model_reads_no_secret(fixture: Fixture) -> None:
    """Tells a model no credential and no address of the system: not in the definitions, not in
    what it answers, and not in the ``model_message`` of any failure, in any state."""
    seen: list[tuple[str, str]] = []
    secrets: set[str] = set()
    definitions: list[ToolDefinition] = []
    for state in STATES:
        if state not in fixture.states:
            continue
        async with opened(fixture, state) as source:
            secrets.update(secret for secret in fixture.secrets if secret)
            outcome = await discover(source, what=f"discover() when the system is {state}")
            _seen(seen, f"discover() when the system is {state}", outcome)
            if state == "working":
                definitions = expect_definitions(outcome, what="discover()")
            toolkit = source_toolkit(source, definitions)
            for tool, input in (*_inputs(), (UNKNOWN_TOOL, {})):
                what = f"call({tool!r}) when the system is {state}"
                _seen(seen, what, await call(source, tool, input, what=what))
                what = f"toolkit.call({tool!r}) when the system is {state}"
                answer = await _toolkit_call(toolkit, tool, input, what=what)
                seen.append((f"what {what} gave the model", text_of(answer)))
    if not secrets:
        fail("the fixture names no secret to look for, so this check could not fail")
    for where, text in seen:
        for secret in sorted(secrets):
            if secret.casefold() in text.casefold():
                fail(f"{where} tells a model {secret!r}: {short(text, 300)}")


def _seen(seen: list[tuple[str, str]], what: str, outcome: Outcome) -> None:
    if isinstance(outcome.error, ToolSourceError):
        seen.append((f"the model_message of what {what} raised", outcome.error.model_message))
    elif outcome.error is None:
        if isinstance(outcome.value, Sequence) and all(
            isinstance(item, ToolDefinition) for item in outcome.value
        ):
            seen.append((f"the definitions {what} lists", text_of(dump(list(outcome.value)))))
        else:
            seen.append((f"what {what} answered", text_of(outcome.value)))


_FAILURES: tuple[tuple[State, type[ToolSourceError], bool], ...] = (
    ("unauthorized", AuthenticationError, False),
    ("unavailable", UnavailableError, True),
    ("unreachable", UnavailableError, True),
)


async def _toolkit_call(
    toolkit: Toolkit, name: str, input: JsonValue, *, what: str, approved: bool = False
) -> JsonValue:
    outcome: JsonValue | None = None
    with anyio.move_on_after(ANSWER_WITHIN) as scope:
        try:
            outcome = await toolkit.call(name, input, approved=approved)
        except Exception as error:  # noqa: BLE001 - reported as the check's finding
            fail(f"{what} raised {type(error).__name__}: {short(str(error))}; a toolkit never does")
    if scope.cancel_called:
        fail(f"{what} did not answer within {ANSWER_WITHIN:g} s")
    return outcome


def _expect_failure(value: JsonValue, code: str, *, retryable: bool, what: str) -> Failure:
    failure = Failure.from_json(value)
    if failure is None:
        fail(f"{what} should be a {code} failure, but it answered {short(value)}")
    if failure.code != code or failure.retryable is not retryable:
        fail(
            f"{what} should be a {code} failure (retryable={retryable}), but it is "
            f"{failure.code} (retryable={failure.retryable}): {short(failure.message)}"
        )
    return failure


async def _expect_echo(toolkit: Toolkit, name: str, *, what: str) -> None:
    text = _text()
    answer = await _toolkit_call(toolkit, name, {"text": text}, what=what)
    failure = Failure.from_json(answer)
    if failure is not None:
        fail(f"{what} should answer, but it is a {failure.code} failure: {short(failure.message)}")
    if text not in text_of(answer):
        fail(f"{what} with the text {text!r} answered {short(answer)}, which does not hold it")


@_check
async def toolkit_reads_failures_as_results(fixture: Fixture) -> None:
    """Is read by a model through ``at.source_toolkit`` as results: answers, each failure above as
    a Failure, and an input its parameters do not allow refused before the source sees it."""
    async with opened(fixture, "working") as source:
        definitions = await _definitions(source)
        toolkit = source_toolkit(source, definitions)
        missing = [tool for tool in TOOLS if tool not in toolkit.tools]
        if missing:
            fail(f"the toolkit of the definitions has no {', '.join(missing)}")
        await _expect_echo(toolkit, "echo", what="toolkit.call('echo')")
        what = "toolkit.call('failing')"
        answer = await _toolkit_call(toolkit, "failing", {}, what=what)
        _expect_failure(answer, "CallFailedError", retryable=False, what=what)
        bad_inputs: tuple[JsonValue, ...] = ({"text": 5}, {}, "text")
        for bad in bad_inputs:
            what = f"toolkit.call('echo', {bad!r}), an input the parameters do not allow,"
            answer = await _toolkit_call(toolkit, "echo", bad, what=what)
            _expect_failure(answer, "InvalidInputError", retryable=False, what=what)
    for state, reason, retryable in _FAILURES:
        if state not in fixture.states:
            continue
        async with opened(fixture, state) as source:
            toolkit = source_toolkit(source, definitions)
            what = f"toolkit.call('echo') when the system is {state}"
            answer = await _toolkit_call(toolkit, "echo", {"text": _text()}, what=what)
            _expect_failure(answer, reason.__name__, retryable=retryable, what=what)


@_check
async def assembled_by_assemble(fixture: Fixture) -> None:
    """Is assembled by ``at.assemble``: its tools under model-facing names that reach it by its
    own names, as the policy decides (``echo`` allowed, ``failing`` approved, ``blocking`` blocked)."""
    decisions: dict[str, Decision] = {"echo": "allow", "failing": "approve", "blocking": "block"}
    async with opened(fixture, "working") as source:
        definitions = await _definitions(source)
        try:
            toolkit = assemble(
                [Member(source, definitions)],
                lambda _source, definition: decisions.get(definition.name, "allow"),
            )
        except (NameClash, ValueError) as error:
            fail(f"at.assemble refuses the definitions: {error}")
        names = {toolkit.source_tool(name)[1]: name for name in toolkit.tools}
        for name in toolkit.tools:
            if toolkit.source_tool(name)[0] != source.name:
                fail(
                    f"{name!r} reaches the source {toolkit.source_tool(name)[0]!r}, not {source.name!r}"
                )
        if "blocking" in names or "echo" not in names or "failing" not in names:
            fail(f"the assembly has the tools {sorted(names)}, not echo and failing")
        if toolkit.tools[names["failing"]].needs_approval is not True:
            fail("failing, which the policy approves, does not need approval in the assembly")
        await _expect_echo(
            toolkit, names["echo"], what=f"assembled toolkit.call({names['echo']!r})"
        )
        what = f"assembled toolkit.call({names['failing']!r})"
        # The suite is the host here, and approves the call it makes.
        answer = await _toolkit_call(toolkit, names["failing"], {}, what=what, approved=True)
        _expect_failure(answer, "CallFailedError", retryable=False, what=what)


@_check
async def runs_in_a_runtime(fixture: Fixture) -> None:
    """Runs as an actor of ``at.Runtime``: the ``ActorRef`` lists and runs its tools, fails
    ``failing`` as ``CallFailedError`` naming it, and stops an interrupted call."""
    async with opened(fixture, "working", as_made=True) as source, Runtime() as runtime:
        actor = await runtime.spawn(source)
        if actor.name != source.name:
            fail(f"the actor is named {actor.name!r}, but its source {source.name!r}")
        what = "the actor's discover()"
        names = {definition.name for definition in await _definitions(actor, what=what)}
        missing = [tool for tool in TOOLS if tool not in names]
        if missing:
            fail(f"{what} does not list {', '.join(missing)} (it lists {sorted(names)})")
        await _echo(actor, _text(), what="the actor's call('echo')")
        what = "the actor's call('failing')"
        expect_error(await call(actor, "failing", {}, what=what), CallFailedError, actor, what=what)
        await _interrupt_blocking(fixture, actor, what="the actor's call('blocking')")


CHECKS: tuple[Check, ...] = (
    definitions_are_stored_as_json,
    definitions_have_distinct_names,
    definitions_are_the_same_each_time,
    tools_run_by_the_names_they_list,
    concurrent_calls_get_their_own_answers,
    failing_is_call_failed,
    unknown_tool_is_an_error_of_the_source,
    tools_run_again_after_a_failure,
    interrupted_call_stops,
    refused_credentials_are_authentication_errors,
    down_is_unavailable,
    unreachable_is_unavailable,
    model_reads_no_secret,
    toolkit_reads_failures_as_results,
    assembled_by_assemble,
    runs_in_a_runtime,
)
"""Every check, in the order :func:`~amends_toolkit.conformance.run` runs them."""
