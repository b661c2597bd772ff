"""The requests an actor serves, each its own one-shot reply, and the waiter they wake.

A caller puts a :class:`Discover` or a :class:`Call` into the actor's mailbox and awaits it
(:meth:`Request.wait`); a worker of the actor takes it, runs it and answers it once
(:meth:`Request.resolve` or :meth:`Request.fail`). A request the actor runs in its caller's own
task (an inline call) is answered the same way, and read at once with :meth:`Request.answer`:
it never waits, so it makes no waiter. A caller that leaves calls :meth:`Request.abandon`: a
request not yet taken is skipped, and one that runs is cancelled in the worker running it.
Deadlines are absolute, on anyio's clock (``anyio.current_time()``).

The hop is the runtime's hot path, so a request is one object (no separate reply, no event per
request on asyncio): on asyncio a waiter is the loop's own future, elsewhere an ``anyio.Event``.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Protocol

import anyio
import sniffio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._errors import ToolSourceError
    from amends_toolkit._json import JsonObject
    from amends_toolkit._progress import OnProgress
    from amends_toolkit._tracing import Carried
    from amends_toolkit.runtime._source import ToolSource

__all__ = ("Call", "Discover", "Request", "Waiter", "waiters")


class Waiter(Protocol):
    """A one-shot wake-up, awaited by the task that made it (an asyncio future's subset)."""

    def done(self) -> bool: ...

    def cancelled(self) -> bool: ...

    def set_result(self, result: None, /) -> None: ...

    def __await__(self) -> Generator[object, None, object]: ...


class _EventWaiter:
    """A waiter over ``anyio.Event``, for a backend other than asyncio (trio).

    Like an asyncio future awaited by a task that is cancelled, it is cancelled (and done) as
    soon as the scope of the task waiting on it is: trio takes a cancelled task off the event
    at once, before the task runs again.
    """

    __slots__ = ("_event", "_waited")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._waited = False

    def done(self) -> bool:
        return self._event.is_set() or self.cancelled()

    def cancelled(self) -> bool:
        return (
            self._waited
            and not self._event.is_set()
            and self._event.statistics().tasks_waiting == 0
        )

    def set_result(self, result: None, /) -> None:
        self._event.set()

    def __await__(self) -> Generator[object, None, object]:
        self._waited = True
        return self._event.wait().__await__()


def waiters() -> Callable[[], Waiter]:
    """What makes waiters in the running event loop (call it inside the loop)."""
    if sniffio.current_async_library() == "asyncio":
        return asyncio.get_running_loop().create_future
    return _EventWaiter


class Request:
    """A request to an actor, and its answer: a value or a ``ToolSourceError``, set once.

    ``abandoned`` is set by a caller that left before the answer came: a worker that finds it
    set skips the request; ``scope`` is the cancel scope it runs in (its worker's, or its own
    when it runs in its caller's task), if it runs; ``started``: a worker started it (it may have
    ended unanswered: a crash cut it, and its answer waits for the crash's cause).
    """

    __slots__ = (
        "_answered",
        "_error",
        "_value",
        "_waiter",
        "abandoned",
        "deadline",
        "scope",
        "started",
    )

    def __init__(self, deadline: float = math.inf) -> None:
        self._waiter: Waiter | None = None  # given by wait(): only a caller that waits needs one
        self._answered = False
        self._value: object = None
        self._error: ToolSourceError | None = None
        self.deadline = deadline
        self.abandoned = False
        self.scope: anyio.CancelScope | None = None
        self.started = False

    @property
    def done(self) -> bool:
        """Whether the request is answered."""
        return self._answered

    @property
    def what(self) -> str:
        """What the request asks, for the logs."""
        raise NotImplementedError

    def run(self, source: ToolSource) -> Awaitable[object]:
        """Ask ``source`` what the request asks (its answer is for :meth:`resolve`)."""
        raise NotImplementedError

    def resolve(self, value: object) -> None:
        """Answer with a value (nothing if answered already)."""
        if not self._answered:
            self._answered = True
            self._value = value
            self._wake()

    def fail(self, error: ToolSourceError) -> None:
        """Answer with an error (nothing if answered already)."""
        if not self._answered:
            self._answered = True
            self._error = error
            self._wake()

    def _wake(self) -> None:
        # An asyncio future is cancelled with the task that awaited it: nobody to wake then.
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def abandon(self) -> None:
        """The caller left: skip the request, or cancel it where it runs."""
        self.abandoned = True
        if self.scope is not None and not self._answered:
            self.scope.cancel()

    async def wait(self, waiter: Waiter) -> object:
        """The value, or raise the error, once answered, woken through ``waiter`` (a new one,
        made in the caller's loop); cancellation leaves the request unanswered."""
        if not self._answered:
            self._waiter = waiter
            await waiter
        return self.answer()

    def answer(self) -> object:
        """The value of a request answered already, or raise its error."""
        if self._error is not None:
            raise self._error
        return self._value


class Discover(Request):
    """Ask the source for its tools."""

    __slots__ = ()

    @property
    def what(self) -> str:
        return "discover"

    def run(self, source: ToolSource) -> Awaitable[object]:
        return _listed(source)


class Call(Request):
    """Run one tool; answered with its JSON.

    ``progress`` is who listens to the call's progress (the caller's
    :func:`amends_toolkit._progress.listener`), carried across the mailbox to the worker;
    ``trace``: the caller's trace context when its call is traced
    (:func:`amends_toolkit._tracing.carried`), so that the source's span is a child of the
    caller's in whichever task runs it.
    """

    __slots__ = ("input", "progress", "tool", "trace")

    def __init__(
        self,
        tool: str,
        input: JsonObject,
        deadline: float = math.inf,
        progress: OnProgress | None = None,
        trace: Carried | None = None,
    ) -> None:
        # Positional too, and Request's own __init__ without super(): every call of an actor
        # makes one, a class called with keywords builds a dict of them, super() an object.
        Request.__init__(self, deadline)
        self.tool = tool
        self.input = input
        self.progress = progress
        self.trace = trace

    @property
    def what(self) -> str:
        return self.tool

    def run(self, source: ToolSource) -> Awaitable[object]:
        call = source.call(self.tool, self.input)
        if self.trace is not None:
            return self.trace.run(source.name, self.tool, call)
        return call


async def _listed(source: ToolSource) -> list[ToolDefinition]:
    return list(await source.discover())
