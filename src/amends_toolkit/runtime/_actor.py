"""The actor that hosts one tool source, and the supervisor loop that restarts it.

Rules of the runtime:

=====================  ======================================================================
What happens           What the caller gets
=====================  ======================================================================
a call runs            its own answer; calls run concurrently, up to ``max_concurrency``
the source fails       the ``ToolSourceError`` it raised
a defect in a call     ``UnknownError`` ("the source failed"), logged with its traceback; the
                       actor keeps serving
the deadline passes    ``UnavailableError``; the call is cancelled inside the actor
the caller is          its call is cancelled inside the actor (the source sees the
cancelled              cancellation); nothing is reported, cancellation is not an error
the actor crashes      running calls get ``UnavailableError``; the supervisor restarts it and
                       queued calls wait for the new incarnation
past the intensity     every queued and later call gets ``UnavailableError``, never a hang
the runtime stops      every queued and running call gets ``UnavailableError``
the mailbox is full    the caller waits to send (backpressure), within its own cancel scope
=====================  ======================================================================
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Literal, cast

import anyio
import attrs

from amends_toolkit._errors import ToolSourceError, UnavailableError, UnknownError
from amends_toolkit._log import get_logger
from amends_toolkit._progress import listener, listening
from amends_toolkit.runtime._messages import Call, Cancel, Control, Discover, Reply, Request, Stop
from amends_toolkit.runtime._source import Lifespan, ToolSource

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("ActorRef", "ActorStatistics", "Restart")

_log = get_logger(__name__)

# How long past its deadline a caller waits for an actor whose source ignores cancellation.
_GRACE = 5.0


@attrs.frozen(kw_only=True)
class Restart:
    """How a supervisor restarts a crashed actor (OTP's intensity and period).

    An actor that crashes more than ``intensity`` times within ``period`` seconds is given up:
    its source answers ``UnavailableError`` to every call from then on. ``intensity=0`` never
    restarts.
    """

    intensity: int = 3
    period: float = 5.0

    def __attrs_post_init__(self) -> None:
        if self.intensity < 0 or self.period <= 0:
            raise ValueError("Restart needs intensity >= 0 and period > 0")


State = Literal["starting", "running", "restarting", "stopped", "failed"]


@attrs.frozen(kw_only=True)
class ActorStatistics:
    """A snapshot of an actor: requests waiting in its mailbox, requests running, restarts."""

    queued: int
    in_flight: int
    restarts: int
    state: State


class ActorRef:
    """The handle of a spawned source: itself a :class:`ToolSource` of the same name.

    Every method may be called from any task, concurrently. A caller's cancel scope
    (``anyio.fail_after``) cancels its request inside the actor.
    """

    def __init__(
        self,
        source: ToolSource,
        *,
        max_concurrency: int,
        mailbox_size: int,
        call_timeout: float | None,
        restart: Restart,
    ) -> None:
        if max_concurrency < 1 or mailbox_size < 0:
            raise ValueError("spawn needs max_concurrency >= 1 and mailbox_size >= 0")
        if call_timeout is not None and call_timeout <= 0:
            raise ValueError("call_timeout must be positive, or None for no timeout")
        self._source = source
        self._name = source.name
        self._call_timeout = call_timeout
        self._restart = restart
        self._ids = itertools.count(1)
        self._mailbox_in: MemoryObjectSendStream[Request]
        self._mailbox_out: MemoryObjectReceiveStream[Request]
        self._mailbox_in, self._mailbox_out = anyio.create_memory_object_stream[Request](
            mailbox_size
        )
        self._control_in: MemoryObjectSendStream[Control]
        self._control_out: MemoryObjectReceiveStream[Control]
        self._control_in, self._control_out = anyio.create_memory_object_stream[Control](math.inf)
        self._max_concurrency = max_concurrency
        self._pool = 0  # workers of the current incarnation
        self._idle = 0  # of which wait for a request
        self._running: dict[int, tuple[anyio.CancelScope, Reply]] = {}
        self._restarts = 0
        self._last_crash: str | None = None
        self._state: State = "starting"
        self._stopped = anyio.Event()

    @property
    def name(self) -> str:
        """The source's name."""
        return self._name

    async def discover(self) -> Sequence[ToolDefinition]:
        """Ask the source for its tools, through the actor.

        Raises:
            ToolSourceError: the source's failure; ``UnavailableError`` past ``call_timeout`` or
                when the actor is stopped or given up; ``UnknownError`` for a defect.
        """
        reply = Reply()
        message = Discover(id=next(self._ids), reply=reply, deadline=self._deadline())
        return cast("list[ToolDefinition]", await self._ask(message))

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Run one tool through the actor and return its JSON.

        Raises:
            ToolSourceError: the source's failure; ``UnavailableError`` past ``call_timeout`` or
                when the actor is stopped or given up; ``UnknownError`` for a defect.
        """
        reply = Reply()
        message = Call(
            id=next(self._ids),
            tool=tool,
            input=input,
            reply=reply,
            deadline=self._deadline(),
            progress=listener(),
        )
        return cast("JsonValue", await self._ask(message))

    def statistics(self) -> ActorStatistics:
        """Queued and running requests, restarts so far, and the actor's state."""
        return ActorStatistics(
            queued=self._mailbox_in.statistics().current_buffer_used,
            in_flight=len(self._running),
            restarts=self._restarts,
            state=self._state,
        )

    async def stop(self) -> None:
        """Stop the actor and wait until it has: every waiting caller is answered, and the
        source's lifespan is left. Stopping a stopped actor does nothing."""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._control_in.send_nowait(Stop())
        await self._stopped.wait()

    def _deadline(self) -> float:
        # A caller's own deadline needs no place here: its cancel scope cancels the call.
        if self._call_timeout is None:
            return math.inf
        return anyio.current_time() + self._call_timeout

    def _unavailable(self, why: str) -> UnavailableError:
        return UnavailableError(source=self._name, message=why)

    async def _ask(self, message: Request) -> object:
        try:
            await self._mailbox_in.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._unavailable(self._why_stopped()) from None
        try:
            if message.deadline == math.inf:
                return await message.reply.wait()
            with anyio.move_on_at(message.deadline + _GRACE):
                return await message.reply.wait()
        except anyio.get_cancelled_exc_class():
            message.reply.abandoned = True
            self._cancel(message.id)
            raise
        # The source ignored the cancellation at its deadline: no waiter waits forever.
        message.reply.abandoned = True
        self._cancel(message.id)
        raise self._unavailable("the source did not stop at its deadline")

    def _cancel(self, id: int) -> None:
        # An actor that is gone has no call left to cancel.
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._control_in.send_nowait(Cancel(id=id))

    # The actor's side: only the supervisor task and the tasks it starts run below.

    async def supervise(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run incarnations of the actor until it is stopped or given up."""
        crashes: deque[float] = deque()
        task_status.started()
        try:
            while True:
                self._state = "starting" if self._restarts == 0 else "restarting"
                try:
                    stopped = await self._incarnation()
                except Exception as error:  # noqa: BLE001 - a crash, read by the supervisor below
                    _log.error("actor.crashed", source=self._name, exc_info=error)
                    self._last_crash = f"{type(error).__name__}: {error}"
                    now = anyio.current_time()
                    crashes.append(now)
                    while crashes and crashes[0] <= now - self._restart.period:
                        crashes.popleft()
                    if len(crashes) > self._restart.intensity:
                        _log.error("actor.given_up", source=self._name, restarts=self._restarts)
                        self._state = "failed"
                        return
                    self._restarts += 1
                    _log.warning("actor.restarted", source=self._name, restarts=self._restarts)
                    continue
                if stopped:
                    self._state = "stopped"
                    return
        finally:
            if self._state not in ("stopped", "failed"):
                self._state = "stopped"
            self._drain()
            self._stopped.set()

    def _why_stopped(self) -> str:
        """Why a stopped actor answers no more: for one given up, its last crash (for the host)."""
        if self._state != "failed":
            return "the source is stopped"
        return f"the source gave up; its last crash: {self._last_crash}"

    def _drain(self) -> None:
        why = self._why_stopped()
        self._mailbox_in.close()
        self._control_in.close()
        while True:
            try:
                message = self._mailbox_out.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            message.reply.fail(self._unavailable(why))
        self._mailbox_out.close()
        self._control_out.close()

    async def _incarnation(self) -> bool:
        """Serve until stopped (``True``) or crashed (raises)."""
        stop = anyio.Event()
        async with AsyncExitStack() as stack:
            if isinstance(self._source, Lifespan):
                await stack.enter_async_context(self._source.lifespan())
            self._state = "running"
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._control, stop, tasks.cancel_scope)
                # Workers take requests straight from the mailbox, so no task is started per
                # call. The pool grows to the peak concurrency, up to max_concurrency; when
                # every worker is busy, the mailbox fills up.
                self._pool, self._idle = 1, 0
                tasks.start_soon(self._work, tasks)
        return stop.is_set()

    async def _control(self, stop: anyio.Event, incarnation: anyio.CancelScope) -> None:
        async for control in self._control_out:
            if isinstance(control, Stop):
                stop.set()
                incarnation.cancel()
                return
            running = self._running.get(control.id)
            if running is not None:
                running[0].cancel()

    async def _work(self, tasks: TaskGroup) -> None:
        while True:
            self._idle += 1
            try:
                message = await self._mailbox_out.receive()
            finally:
                self._idle -= 1
            if message.reply.abandoned:
                continue
            if self._idle == 0 and self._pool < self._max_concurrency:
                self._pool += 1
                tasks.start_soon(self._work, tasks)
            scope = anyio.CancelScope(deadline=message.deadline)
            self._running[message.id] = (scope, message.reply)
            await self._serve(message, scope)

    async def _serve(self, message: Request, scope: anyio.CancelScope) -> None:
        reply = message.reply
        try:
            with scope:
                if isinstance(message, Call):
                    with listening(message.progress):
                        reply.resolve(await self._source.call(message.tool, message.input))
                else:
                    reply.resolve(list(await self._source.discover()))
            if scope.cancelled_caught and not reply.abandoned:
                what = message.tool if isinstance(message, Call) else "discover"
                _log.warning("call.timed_out", source=self._name, tool=what)
                reply.fail(self._unavailable("the source did not answer in time"))
        except ToolSourceError as error:
            reply.fail(error)
        except Exception as error:  # noqa: BLE001 - a defect: logged here, read as UnknownError
            what = message.tool if isinstance(message, Call) else "discover"
            _log.error("call.defect", source=self._name, tool=what, exc_info=error)
            reply.fail(UnknownError(source=self._name, message=f"defect: {error!r}"))
        finally:
            del self._running[message.id]
            # Cancelled from outside (a stop or a crash of the incarnation): still an answer.
            reply.fail(self._unavailable("the source stopped while the call ran"))
