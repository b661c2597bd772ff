"""The one call path of every tool call, and what a call gives back.

Whatever happens to a call is a result the model reads (:meth:`~amends_toolkit.Toolkit.call`):

=====================================  ==================================================
what happened                          what the model reads (``code`` of the Failure JSON)
=====================================  ==================================================
the name is unknown (or blocked)       ``NotFoundError``, with the names it may have meant
the input is not an object, or does    ``InvalidInputError``, saying what to fix; the
not match the tool's schema            handler (the source) never sees the input
the tool needs approval, and nobody    ``ApprovalRequired``: the host runs it in a Session
was asked (or ``approve`` raised       (which asks a person), or says it approved the call
``ApprovalRequired``: none could be)
a person refused it (Session)          ``ApprovalDenied``
nobody decided in time (``approve``    ``ApprovalTimedOut``
raised ``ApprovalTimedOut``)
the session's timeout passed           ``UnavailableError``
the handler raised a ToolSourceError   that reason's Failure (``error.to_failure()``)
the handler raised a Failure           that Failure
the handler raised anything else       ``UnknownError`` ("the source failed"), logged
                                       with its traceback: a defect
the call was cancelled                 nothing: cancellation propagates
=====================================  ==================================================

:meth:`~amends_toolkit.Toolkit.invoke` gives the same as a :class:`ToolResult`, which also holds the
``ToolSourceError`` behind a failure, so that a host can act on it (ask for a connection again
after an ``AuthenticationError``).

Every call takes one path, :func:`run_tool` (lookup, input check, approval, deadline, failure
mapping), whether a toolkit, a :class:`~amends_toolkit.Session` or a presentation makes it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias, cast

import anyio
import attrs

from amends_toolkit import _tracing
from amends_toolkit._errors import (
    ApprovalRequired,
    Failure,
    NoApproval,
    NotFoundError,
    ToolSourceError,
    UnknownError,
)
from amends_toolkit._json import JsonInput, JsonObject, JsonValue
from amends_toolkit._log import get_logger
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from amends_toolkit.runtime._toolkit import Toolkit
    from amends_toolkit.runtime._tools import ToolEntry

__all__ = (
    "DENIED",
    "NEEDS_APPROVAL",
    "Approve",
    "Ask",
    "CallOptions",
    "OnError",
    "ToolResult",
    "asking",
    "not_found",
    "refused",
    "run_tool",
    "untimed",
)

_log = get_logger(__name__)

Approve: TypeAlias = Callable[[str, JsonObject], Awaitable[bool] | bool]
"""The host's question to a person: may this tool run with this input? ``True`` or ``False``
is what a person decided; when no person decided, it raises a :class:`~amends_toolkit.NoApproval`
(``ApprovalRequired``: nobody could be asked; ``ApprovalTimedOut``: nobody decided in time)."""

OnError: TypeAlias = Callable[[str, ToolSourceError], Awaitable[None] | None]
"""The host's view of the error behind a failure, with the model-facing name of the tool."""

Ask: TypeAlias = Callable[[str, JsonObject], Awaitable[bool]]
"""How a running call asks a person about another call it makes: ``True`` when approved."""

_ASKING: ContextVar[Ask | None] = ContextVar("amends_toolkit.asking", default=None)


def asking() -> Ask | None:
    """How the Session running the current call asks a person, or ``None`` outside a Session
    and in a source's own call (which makes no calls of the toolkit's; over an actor it runs in
    another task, which could not see it either).

    For a presentation's tool that makes calls of its own in the middle of its call (code mode
    with ``approval="ask"``): it asks through the same ``approve`` the Session was given, and the
    time the person takes does not count in the Session's ``timeout``.
    """
    return _ASKING.get()


@contextlib.contextmanager
def untimed(scope: anyio.CancelScope) -> Iterator[None]:
    """Stop ``scope``'s clock inside the block: waiting for a person is no call's time."""
    remaining = scope.deadline - anyio.current_time()
    scope.deadline = math.inf
    try:
        yield
    finally:
        scope.deadline = anyio.current_time() + remaining


DENIED = Failure(
    code="ApprovalDenied",
    message="A person did not approve this call; it did not run.",
    retryable=False,
)
"""What the model reads when the host's ``approve`` refuses a call."""

NEEDS_APPROVAL = Failure(
    code=ApprovalRequired.__name__,
    message=(
        "This tool needs a person's approval and nobody was asked, so it did not run: the host"
        " must run it in a Session, which asks."
    ),
    retryable=False,
)
"""What the model reads of a call that needs approval made where nobody is asked."""

_NOT_FOUND = NotFoundError(source="toolkit").to_failure()


@attrs.frozen(kw_only=True)
class ToolResult:
    """What one call gave: the JSON the model reads, and what lies behind a failure.

    Attributes:
        value: The JSON the model reads: the tool's answer, or a Failure's JSON.
        failure: The failure, when the call failed (``value`` is then ``failure.to_json()``).
        error: The ``ToolSourceError`` behind the failure, when the handler (the source) raised
            one; for a defect, the ``UnknownError`` the toolkit read it as, whose ``__cause__``
            is the defect. ``None`` for the toolkit's own refusals (unknown name, refused input,
            approval refused, which are the model's or the person's, not the source's).
    """

    value: JsonValue
    failure: Failure | None = None
    error: ToolSourceError | None = None

    @property
    def ok(self) -> bool:
        """Whether the call gave an answer and no failure."""
        return self.failure is None

    def unwrap(self) -> JsonValue:
        """The answer, or raise what failed: ``error`` when there is one, else ``failure``.

        A handler that runs a tool of another toolkit returns ``(await other.invoke(...)).unwrap()``
        so that the outer toolkit gives the same result and keeps the error behind it.
        """
        if self.error is not None:
            raise self.error
        if self.failure is not None:
            raise self.failure
        return self.value

    @classmethod
    def failed(cls, failure: Failure, error: ToolSourceError | None = None) -> ToolResult:
        """The result of a failed call."""
        return cls(value=failure.to_json(), failure=failure, error=error)


@attrs.frozen(kw_only=True)
class CallOptions:
    """How the one call path runs a call: who is asked, for how long, who hears of errors.

    Attributes:
        approve: Asked before a call that needs approval; ``None`` when nobody can be asked,
            which makes such a call an ``ApprovalRequired`` failure.
        timeout: Seconds the tool may run (approval not counted), or ``None``.
        on_error: Sees the ``ToolSourceError`` behind a failure before the result is given.
        asks_a_person: ``approve`` asks a person (a Session's), so a call that makes calls of
            its own (code mode's ``approval="ask"``) may ask through it too, see :func:`asking`;
            a host's ``approved=True`` approves only the call it names.
    """

    approve: Approve | None = None
    timeout: float | None = None
    on_error: OnError | None = None
    asks_a_person: bool = False
    _ask: Ask | None = attrs.field(init=False, eq=False, repr=False)
    """How a running call asks through ``approve`` when the call has no deadline: made once,
    not per call."""

    @_ask.default
    def _ask_default(self) -> Ask | None:
        if not self.asks_a_person or self.approve is None:
            return None
        return functools.partial(_approves, self.approve)

    def ask(self, deadline: anyio.CancelScope | None) -> Ask | None:
        """How a call under ``deadline`` asks a person, or ``None`` when nobody is asked."""
        if self._ask is None or deadline is None:
            return self._ask
        assert self.approve is not None  # _ask is made only with one
        return functools.partial(_asks_untimed, self.approve, deadline)


def _approved(name: str, input: JsonObject) -> bool:
    return True


_NOBODY_ASKED = CallOptions()
_HOST_APPROVED = CallOptions(approve=_approved)


def run_tool(
    toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions = _NOBODY_ASKED
) -> Coroutine[object, object, ToolResult]:
    """The one path of a call: lookup, input check, approval, deadline, failure mapping.

    ``toolkit.call``, a Session and the presentations all run calls through it; ``options``
    says what differs between them. With a tracer provider set by the host, the call is an
    ``execute_tool`` span (see :mod:`amends_toolkit._tracing`); without one, that costs one
    check. Not a coroutine itself: an untraced call in flight holds no frame more.

    Raises:
        TypeError: ``approve`` gave something other than ``True`` or ``False`` (the host's
            mistake, named with its fix).
    """
    tracer = _tracing.tracer()
    if tracer is None:
        return _run_tool(toolkit, name, given, options)
    return _traced_tool(tracer, toolkit, name, given, options)


async def _traced_tool(
    tracer: Tracer, toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions
) -> ToolResult:
    """:func:`_run_tool` in an ``execute_tool`` span: a tool's name only when the toolkit has
    it (a name a model made up is no span's name), and the failure's code as ``error.type``."""
    known = isinstance(name, str) and name in toolkit
    attributes: dict[str, str] = {"gen_ai.operation.name": "execute_tool"}
    if known:
        attributes["gen_ai.tool.name"] = name
    with _tracing.span(
        tracer, f"execute_tool {name}" if known else "execute_tool", attributes
    ) as span:
        token = _tracing.activated(tracer)
        try:
            result = await _run_tool(toolkit, name, given, options)
        finally:
            _tracing.deactivated(token)
        if result.failure is not None:
            _tracing.failed(span, result.failure.code)
        return result


async def _run_tool(
    toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions
) -> ToolResult:
    approve, timeout = options.approve, options.timeout
    entry = toolkit._entries.find(name)
    if entry is None:
        return not_found(toolkit.hints(name) if isinstance(name, str) else [])
    # The host's input as the check reads it: the same object, unchanged (the check refuses any
    # but a dict, as it refuses anything a model sends that is no JSON object).
    input = cast("JsonValue", given)
    problem = entry.check(input)
    if problem is not None:
        return refused(problem)
    assert isinstance(input, dict)  # check() refuses anything but an object
    if entry.tool.needs_approval is not False and entry.tool.requires_approval(input):
        if approve is None:
            _log.info("call.needs_approval", tool=name)
            return ToolResult.failed(NEEDS_APPROVAL)
        try:
            approved = await _approves(approve, name, input)
        except NoApproval as undecided:
            _log.info("call.undecided", tool=name, code=undecided.code)
            return ToolResult.failed(undecided.to_failure())
        if not approved:
            _log.info("call.denied", tool=name)
            return ToolResult.failed(DENIED)
    # One coroutine for the whole call: a call in flight holds every frame of its chain, and
    # with many calls at once the garbage collector walks them all at each young collection.
    # No deadline, no cancel scope: a call's own cancellation needs none.
    deadline = None if timeout is None else anyio.move_on_after(timeout)
    # Only a tool with a handler of its own asks through the call's Session (see asking()).
    ask = None if entry._handler is None else options.ask(deadline)
    token = None if ask is None else _ASKING.set(ask)
    try:
        if deadline is None:
            value = await entry.run(input)
        else:
            value = None
            with deadline:
                value = await entry.run(input)
    except Exception as error:  # noqa: BLE001 - every failure is a result (see _failed)
        result = _failed(entry, error)
    else:
        result = ToolResult(value=value)
    finally:
        if token is not None:
            _ASKING.reset(token)
    if deadline is not None and deadline.cancelled_caught:
        late = timed_out(entry.source_name, name, "Session timeout", timeout)
        result = ToolResult.failed(late.to_failure(), late)
    if result.error is not None and options.on_error is not None:
        seen = options.on_error(name, result.error)
        if inspect.isawaitable(seen):
            await seen
    return result


async def _approves(approve: Approve, name: str, input: JsonObject) -> bool:
    answer = approve(name, input)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, bool):
        raise TypeError(
            f"approve gave {answer!r} for {name}; it must give True (run the call) or False"
            " (refuse it), such as `return answer == 'yes'`"
        )
    return answer


async def _asks_untimed(
    approve: Approve, scope: anyio.CancelScope, name: str, input: JsonObject
) -> bool:
    with untimed(scope):
        return await _approves(approve, name, input)


def not_found(hints: Sequence[str] = ()) -> ToolResult:
    """The result of a name no tool of the toolkit has (or a blocked tool's), with the names
    the model may have meant."""
    if not hints:
        return ToolResult.failed(_NOT_FOUND)
    meant = " or ".join(hints)
    return ToolResult.failed(
        Failure(code=_NOT_FOUND.code, message=f"{_NOT_FOUND.message} Did you mean {meant}?")
    )


def refused(problem: str) -> ToolResult:
    """The result of an input the tool's schema refuses."""
    return ToolResult.failed(Failure(code="InvalidInputError", message=problem, retryable=False))


def _failed(entry: ToolEntry, error: Exception) -> ToolResult:
    """The result of an entry's run that raised ``error``: a ``ToolSourceError`` as its
    failure, a ``Failure`` as itself, anything else as a defect."""
    if isinstance(error, ToolSourceError):
        _log.info(
            "call.failed",
            tool=entry.name,
            source=error.source,
            reason=error.reason,
            retryable=error.retryable,
        )
        return ToolResult.failed(error.to_failure(), error)
    if isinstance(error, Failure):
        _log.info("call.failed", tool=entry.name, reason=error.code)
        return ToolResult.failed(error)
    # A defect: the host reads it in the log, the model reads "the source failed".
    _log.error("call.defect", tool=entry.name, source=entry.source_name, exc_info=error)
    unknown = UnknownError(source=entry.source_name)
    unknown.__cause__ = error
    return ToolResult.failed(unknown.to_failure(), unknown)
