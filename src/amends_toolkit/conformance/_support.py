"""What the checks share: opening a source, bounded calls, and the words of a failed check."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, NoReturn, TypeVar

import anyio
import attrs

from amends_toolkit._definitions import ToolDefinition
from amends_toolkit._errors import ToolSourceError
from amends_toolkit.conformance._fixture import Fixture, Skipped, State
from amends_toolkit.runtime import Lifespan, Runtime, ToolSource

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

ANSWER_WITHIN = 10.0
"""Seconds a system on loopback may take to answer; far below any source's own timeout."""

SEE_WITHIN = 5.0
"""Seconds the system may take to see a ``blocking`` call arrive, or stop once it is cancelled."""

_POLL = 0.01

E = TypeVar("E", bound=ToolSourceError)


def fail(message: str) -> NoReturn:
    raise AssertionError(message)


def short(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@asynccontextmanager
async def opened(
    fixture: Fixture, state: State, *, as_made: bool = False
) -> AsyncIterator[ToolSource]:
    """The fixture's source in ``state``.

    A source with a lifespan (a process, a session it holds) runs only as an actor, so it is
    reached through the ``ActorRef`` of a runtime of its own, which holds the lifespan as a host's
    would; ``as_made`` gives it as the fixture made it.
    """
    if state not in fixture.states:
        raise Skipped(f"the fixture has no {state!r} system")
    async with fixture.source(state) as source:
        if as_made or not isinstance(source, Lifespan):
            yield source
            return
        async with Runtime() as runtime:
            yield await runtime.spawn(source)


@attrs.frozen
class Outcome:
    """What one request to a source did: answered ``value``, or raised ``error``."""

    value: object = None
    error: Exception | None = None

    def describe(self) -> str:
        if self.error is None:
            return f"answered {short(self.value)}"
        return f"raised {type(self.error).__name__}: {short(str(self.error))}"


async def call(source: ToolSource, tool: str, input: JsonObject, *, what: str) -> Outcome:
    """Run ``tool`` once, within :data:`ANSWER_WITHIN` seconds, and say what it did."""
    return await _bounded(lambda: source.call(tool, input), what=what)


async def discover(source: ToolSource, *, what: str) -> Outcome:
    """Ask ``source`` for its tools once, within :data:`ANSWER_WITHIN` seconds."""
    return await _bounded(source.discover, what=what)


async def _bounded(request: Callable[[], Awaitable[object]], *, what: str) -> Outcome:
    outcome: Outcome | None = None
    with anyio.move_on_after(ANSWER_WITHIN) as scope:
        try:
            value = await request()
        except Exception as error:  # noqa: BLE001 - the check reports any exception as the source's
            outcome = Outcome(error=error)
        else:
            outcome = Outcome(value=value)
    if scope.cancel_called or outcome is None:
        fail(f"{what} did not answer within {ANSWER_WITHIN:g} s")
    return outcome


def expect_answer(outcome: Outcome, *, what: str) -> JsonValue:
    """The JSON ``outcome`` answered; fails when it raised or answered something not JSON."""
    if outcome.error is not None:
        fail(f"{what} should answer, but it {outcome.describe()}")
    problem = not_json(outcome.value)
    if problem is not None:
        fail(f"{what} answered something that is not JSON: {problem}")
    return outcome.value  # type: ignore[return-value]


def expect_error(outcome: Outcome, reason: type[E], source: ToolSource, *, what: str) -> E:
    """The ``reason`` ``outcome`` raised, naming ``source``; fails on anything else."""
    error = outcome.error
    if error is None:
        fail(f"{what} should raise {reason.__name__}, but it {outcome.describe()}")
    if not isinstance(error, ToolSourceError):
        fail(
            f"{what} should raise {reason.__name__} (a ToolSourceError), but it "
            f"{outcome.describe()}: any other exception is a defect"
        )
    if not isinstance(error, reason):
        fail(f"{what} should raise {reason.__name__}, but it {outcome.describe()}")
    expect_named(error, source, what=what)
    return error


def expect_named(error: ToolSourceError, source: ToolSource, *, what: str) -> None:
    if error.source != source.name:
        fail(
            f"{what} raised {error.reason} naming the source {error.source!r}, "
            f"but the source is {source.name!r}"
        )


def expect_definitions(outcome: Outcome, *, what: str) -> list[ToolDefinition]:
    """The definitions ``outcome`` answered; fails when it raised or answered anything else."""
    if outcome.error is not None:
        fail(f"{what} should list the tools, but it {outcome.describe()}")
    value = outcome.value
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        fail(f"{what} should answer a sequence of ToolDefinition, but it {outcome.describe()}")
    for item in value:
        if not isinstance(item, ToolDefinition):
            fail(f"{what} listed {short(item)}, which is not a ToolDefinition")
    return list(value)


def not_json(value: object, path: str = "$") -> str | None:
    """Where ``value`` is not JSON data (``json.loads`` would never give it), or ``None``."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = not_json(item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}, which is not a string"
            problem = not_json(item, f"{path}.{key}")
            if problem is not None:
                return problem
        return None
    return f"{path} is {type(value).__name__} {short(value, 80)}"


def text_of(value: object) -> str:
    """``value`` as text to search in: JSON when it is JSON, else its repr."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


async def wait_until(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` holds within :data:`SEE_WITHIN` seconds.

    The system may run in another thread or process, so nothing in this event loop wakes us when
    it records a call: we look again every few milliseconds.
    """
    with anyio.move_on_after(SEE_WITHIN):
        while not condition():  # noqa: ASYNC110 - the system records in another thread or process
            await anyio.sleep(_POLL)
        return True
    return False
