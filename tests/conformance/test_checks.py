"""The checks pass a source that does everything right, and each catches the broken source meant
for it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest

import amends_toolkit as at
from amends_toolkit import conformance
from amends_toolkit.conformance import _checks, _support

from ._broken import (
    AnswersAnotherCall,
    AnswersNotJson,
    DefinitionsChange,
    DetachesBlockingCall,
    DiscoverIgnoresRefusal,
    DownIsNotRetryable,
    EchoTakesAnything,
    FailureIsAnAnswer,
    LeaksAddressInDefinitions,
    LeaksAddressInFailure,
    LeaksTokenInAnswer,
    LifespanFails,
    NamesAnotherSource,
    NamesClashInAnAssembly,
    NeverReachesTheSystem,
    RefusedCredentialsAreUnavailable,
    RepeatsAName,
    SchemaHasNoObjectRoot,
    SchemaIsNotJson,
    StuckAfterAFailure,
    TurnsCancellationIntoAnError,
    UnknownToolIsADefect,
    UnknownToolIsUnknownError,
    UnreachableDiscoverIsADefect,
    UnreachableIsARawError,
)
from ._reference import (
    ReferenceFixture,
    ReferenceSource,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Checks run on the live clock, on either backend."""
    return request.param


@pytest.fixture
def impatient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A system that never sees a call stop is found out in a fraction of a second."""
    monkeypatch.setattr(_support, "SEE_WITHIN", 0.3)
    monkeypatch.setattr(_checks, "SEE_WITHIN", 0.3)


BROKEN: list[tuple[type[ReferenceSource], conformance.Check, str]] = [
    (
        LeaksAddressInFailure,
        conformance.model_reads_no_secret,
        "call\\('failing'\\) .* tells a model",
    ),
    (LeaksTokenInAnswer, conformance.model_reads_no_secret, "'reference-secret-token'"),
    (LeaksAddressInDefinitions, conformance.model_reads_no_secret, "the definitions"),
    (DetachesBlockingCall, conformance.interrupted_call_stops, "the system still runs it"),
    (
        TurnsCancellationIntoAnError,
        conformance.interrupted_call_stops,
        "cancellation is no failure",
    ),
    (NeverReachesTheSystem, conformance.interrupted_call_stops, "never reached the system"),
    (UnknownToolIsADefect, conformance.unknown_tool_is_an_error_of_the_source, "KeyError"),
    (UnknownToolIsUnknownError, conformance.unknown_tool_is_an_error_of_the_source, "a defect"),
    (DefinitionsChange, conformance.definitions_are_the_same_each_time, "the 2. time"),
    (RepeatsAName, conformance.definitions_have_distinct_names, "more than one tool named 'echo'"),
    (SchemaIsNotJson, conformance.definitions_are_stored_as_json, "cannot store"),
    (SchemaHasNoObjectRoot, conformance.definitions_are_stored_as_json, "no object root"),
    (AnswersNotJson, conformance.tools_run_by_the_names_they_list, "not JSON: \\$ is tuple"),
    (
        AnswersAnotherCall,
        conformance.concurrent_calls_get_their_own_answers,
        "does not hold its text",
    ),
    (FailureIsAnAnswer, conformance.failing_is_call_failed, "should raise CallFailedError"),
    (NamesAnotherSource, conformance.failing_is_call_failed, "naming the source 'http'"),
    (StuckAfterAFailure, conformance.tools_run_again_after_a_failure, "after call\\('failing'\\)"),
    (
        RefusedCredentialsAreUnavailable,
        conformance.refused_credentials_are_authentication_errors,
        "should raise AuthenticationError, but it raised UnavailableError",
    ),
    (
        DiscoverIgnoresRefusal,
        conformance.refused_credentials_are_authentication_errors,
        "discover\\(\\) when the system is unauthorized should raise AuthenticationError",
    ),
    (DownIsNotRetryable, conformance.down_is_unavailable, "raised InvalidResponseError"),
    (UnreachableIsARawError, conformance.unreachable_is_unavailable, "ConnectionRefusedError"),
    (UnreachableDiscoverIsADefect, conformance.unreachable_is_unavailable, "discover"),
    (
        EchoTakesAnything,
        conformance.toolkit_reads_failures_as_results,
        "should be a InvalidInputError failure",
    ),
    (NamesClashInAnAssembly, conformance.assembled_by_assemble, "refuses the definitions"),
    (LifespanFails, conformance.runs_in_a_runtime, "the actor's discover\\(\\) should list"),
]


@pytest.fixture(autouse=True)
def _fresh_class_state() -> None:
    DefinitionsChange.listed = 0
    StuckAfterAFailure.broken = False


class DetachingFixture(ReferenceFixture):
    @asynccontextmanager
    async def source(self, state: conformance.State) -> AsyncIterator[at.ToolSource]:
        async with anyio.create_task_group() as tasks:
            source = DetachesBlockingCall(name="reference", state=state, log=self.log)
            source.tasks = tasks
            yield source
            tasks.cancel_scope.cancel()


def _fixture(source_class: type[ReferenceSource]) -> ReferenceFixture:
    if source_class is DetachesBlockingCall:
        return DetachingFixture()
    return ReferenceFixture(source_class)


async def test_a_source_that_does_everything_right_passes_every_check() -> None:
    results = await conformance.run(ReferenceFixture())
    assert results.passed == tuple(check.__name__ for check in conformance.CHECKS)
    assert results.skipped == ()


@pytest.mark.usefixtures("impatient")
@pytest.mark.parametrize(
    ("source_class", "check", "says"), BROKEN, ids=[broken.__name__ for broken, _, _ in BROKEN]
)
async def test_the_check_meant_for_a_broken_source_fails(
    source_class: type[ReferenceSource], check: conformance.Check, says: str
) -> None:
    with pytest.raises(AssertionError, match=says):
        await check(_fixture(source_class))


@pytest.mark.usefixtures("impatient")
async def test_run_names_every_check_that_failed() -> None:
    with pytest.raises(AssertionError) as failed:
        await conformance.run(ReferenceFixture(RefusedCredentialsAreUnavailable))
    message = str(failed.value)
    assert message.startswith(f"2 of {len(conformance.CHECKS)} conformance checks failed:\n")
    assert "\n- refused_credentials_are_authentication_errors: discover() " in message
    assert "\n- toolkit_reads_failures_as_results: toolkit.call('echo') " in message


async def test_run_skips_checks_of_states_the_fixture_does_not_have() -> None:
    fixture = ReferenceFixture()
    fixture.states = ("working", "unavailable", "unreachable")
    results = await conformance.run(fixture)
    assert results.skipped == (
        (
            "refused_credentials_are_authentication_errors",
            "the fixture has no 'unauthorized' system",
        ),
    )


async def test_a_fixture_that_names_no_secret_fails_the_secret_check() -> None:
    fixture = ReferenceFixture()
    fixture.secrets = ()
    with pytest.raises(AssertionError, match="names no secret"):
        await conformance.model_reads_no_secret(fixture)


def test_every_check_is_exported_and_run() -> None:
    exported = {name for name in conformance.__all__ if name.islower() and name != "run"}
    assert exported == {check.__name__ for check in conformance.CHECKS}
    assert all(re.fullmatch(r"[a-z_]+", check.__name__) for check in conformance.CHECKS)


def test_the_public_surface_is_pinned() -> None:
    assert set(conformance.__all__) == {
        "CHECKS",
        "STATES",
        "BlockingCalls",
        "BlockingLog",
        "Check",
        "Fixture",
        "Results",
        "Skipped",
        "State",
        "run",
        *(check.__name__ for check in conformance.CHECKS),
    }
