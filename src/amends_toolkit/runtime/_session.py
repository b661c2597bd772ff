"""The harness side of a turn: it runs a toolkit's tools as the agent calls them.

A session is a cancel scope around the turn. Calls run concurrently, each in the task that
awaits it; a tool that needs approval waits for the host's ``approve`` first; every failure is a
result the model reads, and the host sees the error behind one through ``on_error``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

import anyio

from amends_toolkit._options import check_optional_seconds
from amends_toolkit._progress import Progress, listener, listening
from amends_toolkit.runtime._call import (
    DENIED,
    Approve,
    CallOptions,
    OnError,
    ToolResult,
    run_tool,
)
from amends_toolkit.runtime._scopes import scopes

if TYPE_CHECKING:
    from types import TracebackType

    from amends_toolkit._json import JsonInput, JsonValue
    from amends_toolkit.runtime._toolkit import Toolkit

__all__ = ("DENIED", "Approve", "OnError", "OnProgress", "Session")

OnProgress: TypeAlias = Callable[[str, Progress], Awaitable[None] | None]
"""The host's view of a running call's progress, with the model-facing name of the tool."""


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

    __slots__ = ("_calls", "_on_progress", "_options", "_scope", "_scopes", "_state", "_toolkit")

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        approve: Approve,
        on_error: OnError | None = None,
        timeout: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> None:
        check_optional_seconds(timeout=timeout)
        self._toolkit = toolkit
        self._options = CallOptions(
            approve=approve, timeout=timeout, on_error=on_error, asks_a_person=True
        )
        self._on_progress = on_progress
        self._scope: anyio.CancelScope | None = None
        # Made at the first call: an idle session costs no more than its cancel scope.
        self._calls: set[anyio.CancelScope] | None = None
        self._state = "new"

    @property
    def toolkit(self) -> Toolkit:
        """The toolkit this session runs."""
        return self._toolkit

    async def __aenter__(self) -> Session:
        if self._state != "new":
            raise RuntimeError("a Session can be entered only once, and not after close()")
        self._scopes = scopes()
        self._scope = self._scopes()
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
        for scope in self._calls or ():
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
        for scope in self._calls or ():
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
        with self._scopes() as scope:
            if self._calls is None:
                self._calls = set()
            calls = self._calls
            calls.add(scope)
            try:
                if self._on_progress is None and listener() is None:
                    # No one listens, nor did: listening() would change nothing.
                    return await run_tool(self._toolkit, name, input, self._options)
                # The call's sources tell its progress to on_progress, or to no one.
                with listening(self._progress_of(name)):
                    return await run_tool(self._toolkit, name, input, self._options)
            finally:
                calls.discard(scope)
        # Only the session cancels this scope: it closed while the call ran. Inside its block
        # the session's own cancellation is pending and ends the call; outside, nothing would.
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise anyio.ClosedResourceError

    def _progress_of(self, name: str) -> Callable[[Progress], Awaitable[None] | None] | None:
        on_progress = self._on_progress
        if on_progress is None:
            return None
        return lambda progress: on_progress(name, progress)
