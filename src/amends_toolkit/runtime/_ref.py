"""The handle of a spawned source: its send side and its statistics, nothing of its loop.

A host names the caller of the calls made in a context (:func:`calling_as`); an actor spawned
with ``max_per_caller`` holds a caller past its share in a line of its own (:class:`Shares`),
before the mailbox and the inline path, so no other caller's call waits behind it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import TYPE_CHECKING, Literal, cast

import anyio
import attrs

from amends_toolkit._errors import UnavailableError
from amends_toolkit._log import get_logger
from amends_toolkit._progress import listener
from amends_toolkit._tracing import carried
from amends_toolkit.runtime._deadlines import timed_out
from amends_toolkit.runtime._messages import Call, Discover

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime._mailbox import Mailbox, Shares
    from amends_toolkit.runtime._messages import Request, Waiter

__all__ = ("ActorRef", "ActorState", "ActorStatistics", "calling_as")

_log = get_logger(__name__)

ActorState = Literal["starting", "running", "restarting", "passivated", "stopped", "failed"]

_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "amends_toolkit_caller", default=None
)


@contextlib.contextmanager
def calling_as(caller: str | None) -> Iterator[None]:
    """Name the caller of the calls made inside the block, in this task and the tasks it starts
    (they inherit it, as every context variable).

    An actor spawned with ``max_per_caller`` runs at most that many calls of one caller at once;
    the caller's next call waits (within its deadline and its cancel scope) for one of its own
    calls to end, while other callers' calls take the free slots. Calls made with no caller
    (``None``, the default) have no share: they are bounded by ``max_concurrency`` alone.

    Args:
        caller: What tells one caller from another: a user, a client's session, an address.
            It is kept only while the caller has calls in an actor, and never logged.
    """
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)


@attrs.frozen(kw_only=True)
class ActorStatistics:
    """A snapshot of an actor.

    Attributes:
        queued: Requests waiting in its mailbox.
        in_flight: Requests running.
        restarts: Incarnations started after a crash.
        state: ``starting`` (an incarnation is entering its source's lifespan), ``running``,
            ``restarting`` (after a crash), ``passivated`` (spawned with ``idle_timeout``, it
            runs no incarnation now: its next call or discover starts one), ``stopped``
            (stopped, or ended by itself) or ``failed`` (its supervisor gave up on it).
        passivations: Incarnations ended for being idle ``idle_timeout`` seconds (no crash:
            they count for no restart).
    """

    queued: int
    in_flight: int
    restarts: int
    state: ActorState
    passivations: int = 0


class ActorRef:
    """The handle of a spawned source: itself a :class:`~amends_toolkit.ToolSource` of its name.

    Every method may be called from any task, concurrently. A caller's cancel scope
    (``anyio.fail_after``, a closed session) cancels its request inside the actor; a request
    still in the mailbox never runs. An actor spawned ``inline`` runs a request in its caller's
    own task when it has room for it, and else through its mailbox. Stop an actor with
    :meth:`Runtime.stop <amends_toolkit.Runtime.stop>`.
    """

    __slots__ = (
        "_call_timeout",
        "_grace",
        "_inline",
        "_mailbox",
        "_name",
        "_shares",
        "_statistics",
        "_waiters",
    )

    def __init__(
        self,
        *,
        name: str,
        mailbox: Mailbox,
        waiters: Callable[[], Waiter],
        call_timeout: float | None,
        grace: float,
        statistics: Callable[[], ActorStatistics],
        inline: Callable[[Request], Coroutine[object, object, object] | None] | None = None,
        shares: Shares | None = None,
    ) -> None:
        self._name = name
        self._shares = shares
        self._inline = inline
        self._mailbox = mailbox
        self._waiters = waiters
        self._call_timeout = call_timeout
        self._grace = grace
        self._statistics = statistics

    @property
    def name(self) -> str:
        """The source's name."""
        return self._name

    def __repr__(self) -> str:
        return f"<ActorRef {self._name!r} {self._statistics().state}>"

    async def discover(self) -> Sequence[ToolDefinition]:
        """Ask the source for its tools, through the actor.

        Raises:
            ToolSourceError: the source's failure; ``UnavailableError`` past ``call_timeout`` or
                when the actor is stopped or given up; ``UnknownError`` for a defect.
        """
        return cast("list[ToolDefinition]", await self._ask(Discover(self._deadline())))

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Run one tool through the actor and return its JSON.

        Raises:
            ToolSourceError: the source's failure; ``UnavailableError`` past ``call_timeout`` or
                when the actor is stopped or given up; ``UnknownError`` for a defect.

        The caller's cancellation cancels the call and propagates. A call run inline (in this
        task) lets a ``BaseException`` that is no cancellation (``KeyboardInterrupt``,
        ``SystemExit``) reach the caller, as the source raised it.
        """
        request = Call(tool, input, self._deadline(), listener(), carried())
        return cast("JsonValue", await self._ask(request))

    def statistics(self) -> ActorStatistics:
        """Queued and running requests, restarts so far, and the actor's state."""
        return self._statistics()

    def _deadline(self) -> float:
        # A caller's own deadline needs no place here: its cancel scope cancels the call.
        if self._call_timeout is None:
            return math.inf
        return anyio.current_time() + self._call_timeout

    def _ask(self, request: Request) -> Awaitable[object]:
        # Not a coroutine itself: a call in flight holds one frame less.
        if self._shares is not None and (caller := _CALLER.get()) is not None:
            return self._shared(self._shares, caller, request)
        if self._inline is not None:
            here = self._inline(request)
            if here is not None:
                # The actor had room: the call runs in this task, with no hop (no grace either:
                # only a source that honours cancellation is spawned inline unless told so).
                return here
        return self._sent(request)

    async def _shared(self, shares: Shares, caller: str, request: Request) -> object:
        """``request`` within its caller's share: it waits (in its caller's own line, not in the
        mailbox) while the caller's share is taken, and holds its place until it is answered."""
        if not shares.take_now(caller):
            with anyio.move_on_at(request.deadline) as waited:
                await shares.take(caller)
            if waited.cancelled_caught:
                # Its deadline passed while its caller's share was taken: it never runs.
                raise timed_out(self._name, request.what, "call_timeout", self._call_timeout)
        try:
            here = None if self._inline is None else self._inline(request)
            return await (self._sent(request) if here is None else here)
        finally:
            shares.give_back(caller)

    async def _sent(self, request: Request) -> object:
        try:
            if request.deadline == math.inf:
                await self._mailbox.put(request)
                return await request.wait(self._waiters())
            with anyio.move_on_at(request.deadline):
                await self._mailbox.put(request)
                return await request.wait(self._waiters())
            if request.done:
                return request.answer()
            if not request.started:
                # Its deadline passed before it ran (waiting to be put, or in the mailbox for a
                # worker with a slot): it never runs, and its caller hears so now.
                request.abandon()
                raise timed_out(self._name, request.what, "call_timeout", self._call_timeout)
            # It runs: its worker cancels it at this same deadline; a source that ignores
            # cancellation is waited for ``grace`` more, and so is the cause of a crash that cut
            # it (its incarnation leaving its source's lifespan).
            with anyio.move_on_at(request.deadline + self._grace):
                return await request.wait(self._waiters())
        except anyio.ClosedResourceError:
            raise UnavailableError(source=self._name, message=self._mailbox.why) from None
        except BaseException:
            # Cancelled while waiting for room or for the answer: whether a worker took the
            # request already or not, it must not run on (nor start).
            request.abandon()
            raise
        # The source ignored the cancellation at its deadline: no waiter waits forever.
        request.abandon()
        raise UnavailableError(source=self._name, message="the source did not stop at its deadline")
