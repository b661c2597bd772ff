"""The actor's loop: one incarnation of a source at a time, serving its mailbox.

An incarnation enters its source's lifespan and runs workers that take requests straight from the
mailbox, so no task is started per request: the pool grows to the peak concurrency, up to
``max_concurrency``, and when every worker is busy the mailbox fills up. Each worker has one cancel
scope for its life: a caller that leaves, or a deadline that passes, cancels the call the worker
runs, and the worker then hands its place to a fresh one. The loop knows nothing of restarts:
its supervisor (``_supervisor.py``) decides what follows an incarnation's end.
"""

from __future__ import annotations

import math
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._errors import ToolSourceError, UnavailableError, UnknownError
from amends_toolkit._log import get_logger
from amends_toolkit._progress import listening
from amends_toolkit.runtime._messages import Call
from amends_toolkit.runtime._ref import ActorState, ActorStatistics
from amends_toolkit.runtime._source import has_lifespan

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from amends_toolkit.runtime._mailbox import Mailbox
    from amends_toolkit.runtime._messages import Request
    from amends_toolkit.runtime._source import ToolSource

__all__ = ("Actor",)

_log = get_logger(__name__)

_STOPPED = "the source is stopped"


class Actor:
    """The loop of one spawned source; only its supervisor holds it."""

    def __init__(self, *, name: str, mailbox: Mailbox, max_concurrency: int) -> None:
        self.name = name
        self.mailbox = mailbox
        self.state: ActorState = "starting"
        self.restarts = 0
        self._max_concurrency = max_concurrency
        self._pool = 0  # workers of the current incarnation
        self._idle = 0  # of which wait for a request
        self._running: set[Request] = set()
        self._cut: list[Request] = []  # calls cancelled by a crash, answered once it is known
        self._scope: anyio.CancelScope | None = None
        self._stopping = False

    @property
    def stopping(self) -> bool:
        """Whether the actor was asked to stop."""
        return self._stopping

    def statistics(self) -> ActorStatistics:
        """Queued and running requests, restarts so far, and the state."""
        return ActorStatistics(
            queued=len(self.mailbox),
            in_flight=len(self._running),
            restarts=self.restarts,
            state=self.state,
        )

    def stop(self) -> None:
        """End the incarnation that runs (or the next one, before it begins).

        The mailbox is closed first: queued requests are answered, idle workers end, and only
        running calls are cancelled, so an idle actor stops without a cancellation.
        """
        self._stopping = True
        if self.state != "running" or self._scope is None:
            if self._scope is not None:
                self._scope.cancel()
            return
        for request in self.mailbox.close(_STOPPED):
            request.fail(UnavailableError(source=self.name, message=_STOPPED))
        for request in list(self._running):
            if request.scope is not None:
                request.scope.cancel()

    def close(self, state: ActorState, why: str) -> None:
        """The actor is over: answer every request left, queued or running, and take no more."""
        self.state = state
        # Running requests are answered by their workers; any left here belong to an actor
        # whose source ignores cancellation, which the supervisor abandons.
        for request in [*self.mailbox.close(why), *self._running]:
            request.fail(UnavailableError(source=self.name, message=why))

    async def serve(self, source: ToolSource) -> None:
        """One incarnation: returns when stopped, raises what crashed it.

        A stop cancels what runs now: the lifespan's entry, or else the workers, so that the
        lifespan is left as it is meant to be (its own tasks still running) rather than cancelled.
        """
        if self._stopping:
            return
        try:
            await self._incarnation(source)
        except BaseException as error:
            # The calls the crash cut short learn why, for the host (the model reads only
            # UnavailableError's own words): a process's exit code and stderr, say.
            self._answer_cut(f"the source crashed while the call ran: {described(error)}")
            raise
        finally:
            self._answer_cut("the source stopped while the call ran")

    def _answer_cut(self, why: str) -> None:
        cut, self._cut = self._cut, []
        for request in cut:
            request.fail(UnavailableError(source=self.name, message=why))

    async def _incarnation(self, source: ToolSource) -> None:
        with anyio.CancelScope() as entering:
            self._scope = entering
            async with AsyncExitStack() as stack:
                if has_lifespan(source):
                    await stack.enter_async_context(source.lifespan())
                self.state = "running"
                async with anyio.create_task_group() as tasks:
                    self._scope = tasks.cancel_scope
                    if self._stopping:
                        self.stop()
                    self._pool, self._idle = 1, 0
                    tasks.start_soon(self._work, source, tasks)
        self._scope = None

    async def _work(self, source: ToolSource, tasks: TaskGroup) -> None:
        with anyio.CancelScope() as scope:
            while True:
                self._idle += 1
                try:
                    request = await self.mailbox.get()
                except anyio.EndOfStream:
                    return
                finally:
                    self._idle -= 1
                if request.abandoned:
                    continue
                if self._idle == 0 and self._pool < self._max_concurrency:
                    self._pool += 1
                    tasks.start_soon(self._work, source, tasks)
                await self._serve(source, request, scope)
                if scope.cancel_called:
                    break
        # This worker's scope stopped its call (the caller left, or the deadline passed): a
        # fresh worker takes its place, with a scope nobody has cancelled.
        tasks.start_soon(self._work, source, tasks)

    async def _serve(self, source: ToolSource, request: Request, scope: anyio.CancelScope) -> None:
        self._running.add(request)
        request.scope = scope
        if request.deadline != math.inf:
            scope.deadline = request.deadline
        try:
            if isinstance(request, Call):
                # The caller's listener, carried across the mailbox, hears the call's progress.
                with listening(request.progress):
                    request.resolve(await source.call(request.tool, request.input))
            else:
                request.resolve(list(await source.discover()))
        except ToolSourceError as error:
            request.fail(error)
        except Exception as error:  # noqa: BLE001 - a defect: logged here, read as UnknownError
            _log.error("call.defect", source=self.name, tool=request.what, exc_info=error)
            request.fail(UnknownError(source=self.name, message=f"defect: {error!r}"))
        finally:
            request.scope = None
            self._running.discard(request)
            if not request.done:
                if scope.cancel_called and not request.abandoned and not self._stopping:
                    # Only an abandoning caller and the deadline cancel this scope.
                    _log.warning("call.timed_out", source=self.name, tool=request.what)
                    why = "the source did not answer in time"
                    request.fail(UnavailableError(source=self.name, message=why))
                elif scope.cancel_called or self._stopping:
                    why = "the source stopped while the call ran"
                    request.fail(UnavailableError(source=self.name, message=why))
                else:
                    # Cancelled by a crash of the incarnation: answered with its cause.
                    self._cut.append(request)
            if request.deadline != math.inf and not scope.cancel_called:
                scope.deadline = math.inf


def described(error: BaseException) -> str:
    """A crash in a line, the one error inside a task group's group when there is one."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"
