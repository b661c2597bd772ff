"""The harness side of a turn: it runs a toolkit's tools as the agent calls them.

A session is a cancel scope around the turn. Calls run concurrently, each in the task that
awaits it; a tool that needs approval waits for the host's ``approve`` first; every failure is a
result the model reads, and the host sees the error behind one through ``on_error``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias

import anyio

from amends_toolkit._errors import Failure, ToolSourceError, UnavailableError
from amends_toolkit._json import JsonObject
from amends_toolkit._log import get_logger
from amends_toolkit._progress import Progress, listening
from amends_toolkit.runtime._toolkit import ToolResult, as_json, not_found, refused, run_entry

if TYPE_CHECKING:
    from types import TracebackType

    from amends_toolkit._json import JsonInput, JsonValue
    from amends_toolkit.runtime._toolkit import Toolkit

__all__ = ("DENIED", "Approve", "Ask", "OnError", "OnProgress", "Session", "asking", "untimed")

_log = get_logger(__name__)

Approve: TypeAlias = Callable[[str, JsonObject], Awaitable[bool] | bool]
"""The host's question to a person: may this tool run with this input?"""

OnError: TypeAlias = Callable[[str, ToolSourceError], Awaitable[None] | None]
"""The host's view of the error behind a failure, with the model-facing name of the tool."""

OnProgress: TypeAlias = Callable[[str, Progress], Awaitable[None] | None]
"""The host's view of a running call's progress, with the model-facing name of the tool."""

Ask: TypeAlias = Callable[[str, JsonObject], Awaitable[bool]]
"""How a running call asks a person about another call it makes: ``True`` when approved."""

_ASKING: ContextVar[Ask | None] = ContextVar("amends_toolkit.asking", default=None)


def asking() -> Ask | None:
    """How the Session running the current call asks a person, or ``None`` outside a Session.

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


class Session:
    """A harness turn over a toolkit: ``async with at.Session(toolkit, approve=...) as session``.

    Args:
        toolkit: The toolkit of the turn, as assembled or presented. Shared, never copied.
        approve: Awaited (or called) with a tool's name and checked input before every call of a
            tool that needs approval; ``False`` makes the call a ``ApprovalDenied`` failure that
            the model reads, and the tool does not run. Required: there is no default.
        on_error: Called (and awaited, if it gives an awaitable) with the tool's name and the
            :class:`~amends_toolkit.ToolSourceError` behind a failure, before the call returns:
            for example to ask for a connection again after an ``AuthenticationError``.
        timeout: Seconds a call may run (approval not counted); past it the call is cancelled
            and the model reads an ``UnavailableError`` failure, which ``on_error`` sees too.
        on_progress: Called (and awaited, if it gives an awaitable) with the tool's name and
            each :class:`~amends_toolkit.Progress` its source reports while the call runs (an
            MCP server's ``notifications/progress``), in order. Without it no source is asked
            for progress. A failure of it is logged and the call goes on.

    Leaving the block, or :meth:`close`, interrupts the calls still running: they end by
    cancellation and give no result. A call awaited in a task outside the block when the session
    closes, or one made after it closed, raises :class:`anyio.ClosedResourceError`.
    """

    __slots__ = (
        "_approve",
        "_calls",
        "_on_error",
        "_on_progress",
        "_scope",
        "_state",
        "_timeout",
        "_toolkit",
    )

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        approve: Approve,
        on_error: OnError | None = None,
        timeout: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> None:
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout}")
        self._toolkit = toolkit
        self._approve = approve
        self._on_error = on_error
        self._timeout = timeout
        self._on_progress = on_progress
        self._scope: anyio.CancelScope | None = None
        self._calls: set[anyio.CancelScope] = set()
        self._state = "new"

    @property
    def toolkit(self) -> Toolkit:
        """The toolkit this session runs."""
        return self._toolkit

    async def __aenter__(self) -> Session:
        if self._state != "new":
            raise RuntimeError("a Session can be entered only once, and not after close()")
        self._scope = anyio.CancelScope()
        self._scope.__enter__()
        self._state = "open"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._state = "closed"
        # Calls inside the block have ended by now; the ones left run in tasks outside it.
        for scope in self._calls:
            scope.cancel()
        assert self._scope is not None  # entered
        return self._scope.__exit__(exc_type, exc, traceback)

    def close(self) -> None:
        """Interrupt the turn: every call still running is cancelled and the block ends.

        The cancellation stops at the session's block, as ``anyio.move_on_after`` does. A session
        closed before it is entered never runs a call.
        """
        if self._scope is None:
            self._state = "closed"
            return
        self._scope.cancel()
        for scope in self._calls:
            scope.cancel()

    async def call(self, name: str, input: JsonInput) -> JsonValue:
        """Run a tool as the agent asked and give the JSON the model reads.

        Failures are results (see :meth:`amends_toolkit.Toolkit.call`); a refused approval is an
        ``ApprovalDenied`` failure and a call past ``timeout`` an ``UnavailableError`` one.

        Raises:
            anyio.ClosedResourceError: the session closed before or while this call ran in a
                task outside its block (inside it, the call ends by cancellation).
            RuntimeError: the session was never entered.
        """
        return (await self.invoke(name, input)).value

    async def invoke(self, name: str, input: JsonInput) -> ToolResult:
        """Run a tool as :meth:`call` does, and give the result with the error behind a failure."""
        if self._state == "new":
            raise RuntimeError("enter the Session (async with) before calling its tools")
        if self._state == "closed":
            raise anyio.ClosedResourceError
        with anyio.CancelScope() as scope:
            self._calls.add(scope)
            try:
                # The call's sources tell its progress to on_progress, or to no one.
                with listening(self._progress_of(name)):
                    return await self._run(name, input)
            finally:
                self._calls.discard(scope)
        # Only the session cancels this scope: it closed while the call ran. Inside its block
        # the session's own cancellation is pending and ends the call; outside, nothing would.
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise anyio.ClosedResourceError

    async def _run(self, name: str, given: JsonInput) -> ToolResult:
        try:
            entry = self._toolkit.entry(name)
        except KeyError:
            return not_found()
        input = as_json(given)
        problem = entry.check(input)
        if problem is not None:
            return refused(problem)
        assert isinstance(input, dict)  # check() refuses anything but an object
        if entry.tool.requires_approval(input) and not await self._asks(name, input):
            _log.info("call.denied", tool=name)
            return ToolResult.failed(DENIED)
        with anyio.move_on_after(self._timeout) as deadline:
            token = _ASKING.set(functools.partial(self._asks_untimed, deadline))
            try:
                result = await run_entry(entry, input)
            finally:
                _ASKING.reset(token)
        if deadline.cancelled_caught:
            source = entry.route[0] if entry.route is not None else name
            _log.info("call.timed_out", tool=name, source=source, timeout=self._timeout)
            error = UnavailableError(
                source=source, message=f"the call took longer than {self._timeout} seconds"
            )
            result = ToolResult.failed(error.to_failure(), error)
        if result.error is not None and self._on_error is not None:
            seen = self._on_error(name, result.error)
            if inspect.isawaitable(seen):
                await seen
        return result

    def _progress_of(self, name: str) -> Callable[[Progress], Awaitable[None] | None] | None:
        on_progress = self._on_progress
        if on_progress is None:
            return None
        return lambda progress: on_progress(name, progress)

    async def _asks(self, name: str, input: JsonObject) -> bool:
        approved = self._approve(name, input)
        if inspect.isawaitable(approved):
            approved = await approved
        return approved is True

    async def _asks_untimed(self, scope: anyio.CancelScope, name: str, input: JsonObject) -> bool:
        with untimed(scope):
            return await self._asks(name, input)
