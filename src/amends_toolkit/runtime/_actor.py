"""The actor's loop: one incarnation of a source at a time, serving its mailbox.

An incarnation enters its source's lifespan and runs workers that take requests straight from the
mailbox, so no task is started per request: the pool grows to the peak concurrency, up to
``max_concurrency``, and when every worker is busy the mailbox fills up. A worker takes a request
only once it has a slot (below), and keeps the slot while requests wait, taking the next as the
last one ends: a hand-over in the same turn of the loop, with no other worker woken for it. Each
worker has one cancel scope for its life: a caller that leaves, or a deadline that passes,
cancels the call the worker runs, and the worker then hands its place to a fresh one.

An actor spawned ``inline`` runs a call in its caller's own task when it has room for it: the
incarnation runs, nothing waits in the mailbox or to be put in it, a slot is free, and a worker
waits for a request (not cancelled: a crash of the incarnation cancels it at once, so no call
starts inline in an incarnation that is ending, as none starts in a worker). That saves
the two hops through the mailbox (caller to worker and back); the call has a cancel scope of its
own, with its deadline, which a stop or the incarnation's end cancels as a worker's. Slots
(``max_concurrency`` of them) bound inline calls and worker calls together: while inline calls
hold every slot, a worker woken by a request waits for one, and the request waits in the mailbox,
first in line (a newcomer goes behind it, and should the incarnation end meanwhile, it waits
there for the next one, as every queued request does). Each incarnation
keeps its own slots and calls (:class:`_Life`), and leaves its source's lifespan only once its
inline calls are over (cancelled, then waited for, shielded, at most ``grace``), so a new
incarnation never sees a call of the one before.

An actor spawned with an ``idle_timeout`` ends an incarnation that has had nothing in flight (no
call or discover running, inline or in a worker) for that long: its idle workers are cancelled (a
request put at that moment waits in the mailbox for the next incarnation), its source's lifespan
is left as at a stop, and :meth:`Actor.serve` returns ``True`` (passivated). When it last had
nothing in flight is noted as its last call ends (``_Life.quiet``); one task per incarnation
sleeps until that time plus the timeout, and looks again a timeout later while calls run. A
passivated actor holds no incarnation: :meth:`Actor.wait_for_request` waits (without taking it)
for the next request, which then waits in the mailbox for the next incarnation's workers.

The loop knows nothing of restarts: its supervisor (``_supervisor.py``) decides what follows an
incarnation's end.
"""

from __future__ import annotations

import math
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._errors import ToolSourceError, UnavailableError, UnknownError, sole
from amends_toolkit._log import get_logger
from amends_toolkit._progress import listening
from amends_toolkit.runtime._deadlines import timed_out
from amends_toolkit.runtime._mailbox import Slots
from amends_toolkit.runtime._messages import Call
from amends_toolkit.runtime._ref import ActorState, ActorStatistics
from amends_toolkit.runtime._scopes import scopes
from amends_toolkit.runtime._source import has_lifespan

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from anyio.abc import TaskGroup

    from amends_toolkit.runtime._mailbox import Mailbox
    from amends_toolkit.runtime._messages import Request, Waiter
    from amends_toolkit.runtime._source import ToolSource

__all__ = ("Actor",)

_log = get_logger(__name__)

_STOPPED = "the source is stopped"
_STOPPED_WHILE = "the source stopped while the call ran"


class _Life:
    """One incarnation: its source, its slots and the calls running in it."""

    __slots__ = (
        "cut",
        "drained",
        "open",
        "quiet",
        "running",
        "scopes",
        "slots",
        "source",
        "watch",
        "why",
    )

    def __init__(self, source: ToolSource, slots: Slots) -> None:
        self.source = source
        self.slots = slots
        self.scopes = scopes()  # makes an inline call's cancel scope
        self.running: set[Request] = set()
        self.open = False  # its lifespan is entered and it is not ending: it takes inline calls
        self.cut: list[Request] = []  # calls its end cancelled, answered once the cause is known
        self.why: str | None = None  # that cause, once known
        self.drained: anyio.Event | None = None  # set as its last inline call ends, once ending
        self.quiet = 0.0  # when it last had nothing in flight (noted only with an idle timeout)
        self.watch: anyio.CancelScope | None = None  # of the wait for idleness, which a stop ends


class Actor:
    """The loop of one spawned source; only its supervisor holds it (and its ref, :meth:`inline`)."""

    def __init__(
        self,
        *,
        name: str,
        mailbox: Mailbox,
        waiters: Callable[[], Waiter],
        max_concurrency: int,
        grace: float,
        idle_timeout: float | None = None,
    ) -> None:
        self.name = name
        self.mailbox = mailbox
        # With an idle timeout it starts passivated: its first request starts an incarnation.
        self.state: ActorState = "starting" if idle_timeout is None else "passivated"
        self.restarts = 0
        self.passivations = 0
        self._idle_timeout = idle_timeout
        self._waiters = waiters
        self._max_concurrency = max_concurrency
        self._grace = grace
        self._pool = 0  # workers of the current incarnation
        self._idle = 0  # of which wait for a request
        self._life: _Life | None = None
        self._scope: anyio.CancelScope | None = None
        self._stopping = False

    @property
    def stopping(self) -> bool:
        """Whether the actor was asked to stop."""
        return self._stopping

    def statistics(self) -> ActorStatistics:
        """Queued and running requests (inline calls too), restarts so far, and the state."""
        life = self._life
        return ActorStatistics(
            queued=len(self.mailbox),
            in_flight=0 if life is None else len(life.running),
            restarts=self.restarts,
            state=self.state,
            passivations=self.passivations,
        )

    def stop(self) -> None:
        """End the incarnation that runs (or the next one, before it begins).

        The mailbox is closed first: queued requests are answered, idle workers end, and only
        running calls (inline ones too) are cancelled, so an idle actor stops without a
        cancellation.
        """
        self._stopping = True
        life = self._life
        if self.state == "passivated":
            # Its supervisor waits for a request: the mailbox closed, it waits no more.
            for request in self.mailbox.close(_STOPPED):
                request.fail(UnavailableError(source=self.name, message=_STOPPED))
            return
        if self.state != "running" or self._scope is None or life is None:
            if self._scope is not None:
                self._scope.cancel()
            return
        for request in self.mailbox.close(_STOPPED):
            request.fail(UnavailableError(source=self.name, message=_STOPPED))
        if life.watch is not None:
            life.watch.cancel()
        _cancel_running(life)

    def close(self, state: ActorState, why: str) -> None:
        """The actor is over: answer every request left, queued or running, and take no more."""
        self.state = state
        # Running requests are answered where they run; any left here belong to an actor whose
        # source ignores cancellation, which the supervisor abandons.
        running = [] if self._life is None else list(self._life.running)
        for request in [*self.mailbox.close(why), *running]:
            request.fail(UnavailableError(source=self.name, message=why))

    def inline(self, request: Request) -> Coroutine[object, object, object] | None:
        """``request`` run in the caller's own task if the actor has room for it now, else
        ``None`` (the caller sends it through the mailbox). Decided without awaiting, so nothing
        changes between the decision and the call; the caller awaits what it gets at once (a
        slot is taken for it).

        What it gives returns the call's value, or raises its ``ToolSourceError``,
        ``UnavailableError`` past its deadline or when the actor stops or crashes meanwhile, and
        ``UnknownError`` for a defect. The caller's own cancellation propagates, and so does a
        ``BaseException`` that is not one (``KeyboardInterrupt``, ``SystemExit``).
        """
        life = self._life
        if (
            life is None
            or not life.open
            or self._stopping
            or not self.mailbox.ready
            or not life.slots.take_now()
        ):
            return None
        return self._inline(life, request)

    async def _inline(self, life: _Life, request: Request) -> object:
        life.running.add(request)
        deadline = request.deadline
        # Without a deadline, made with no argument (anyio's constructors take it by keyword).
        scope = life.scopes() if deadline == math.inf else life.scopes(deadline=deadline)
        request.scope = scope
        try:
            with scope:
                await self._attempt(life.source, request)
        finally:
            request.scope = None
            life.running.discard(request)
            life.slots.give_back()
            if not life.running:
                self._quiet(life)
            # Unanswered with its scope not cancelled: the caller's own cancellation, or a
            # BaseException, which propagate as they are.
            if not request.done and scope.cancel_called:
                self._unanswered(life, request, cancelled=True)
        if request.done:
            return request.answer()
        # Cut by a crash: answered once its cause is known.
        return await request.wait(self._waiters())

    def _quiet(self, life: _Life) -> None:
        """Nothing runs in ``life`` now (its last call just ended)."""
        if life.drained is not None:
            life.drained.set()
        if self._idle_timeout is not None:
            life.quiet = anyio.current_time()

    async def wait_for_request(self) -> bool:
        """Passivated: wait until a request waits in the mailbox, without taking it (the next
        incarnation's workers take it). ``False`` when the actor is stopped meanwhile."""
        self.state = "passivated"
        # No cancel scope of its own (one costs a kilobyte an idle actor would hold): a stop
        # closes the mailbox, which ends the wait.
        if not self._stopping:
            with suppress(anyio.EndOfStream):
                await self.mailbox.wait()
        return not (self._stopping or self.mailbox.closed)

    async def serve(self, source: ToolSource) -> bool:
        """One incarnation: returns when stopped (``False``) or passivated (``True``), raises
        what crashed it.

        A stop cancels what runs now: the lifespan's entry, or else the calls, so that the
        lifespan is left as it is meant to be (its own tasks still running) rather than cancelled.
        """
        if self._stopping:
            return False
        life = _Life(source, Slots(self._max_concurrency, self._waiters))
        self._life = life
        try:
            return await self._incarnation(life)
        except BaseException as error:
            # The calls the crash cut short learn why, for the host (the model reads only
            # UnavailableError's own words): a process's exit code and stderr, say.
            self._answer_cut(life, f"the source crashed while the call ran: {described(error)}")
            raise
        finally:
            self._answer_cut(life, _STOPPED_WHILE)
            self._life = None

    def _answer_cut(self, life: _Life, why: str) -> None:
        if life.why is None:
            life.why = why
        cut, life.cut = life.cut, []
        for request in cut:
            request.fail(UnavailableError(source=self.name, message=life.why))

    async def _incarnation(self, life: _Life) -> bool:
        passivated = False
        with anyio.CancelScope() as entering:
            self._scope = entering
            async with AsyncExitStack() as stack:
                if has_lifespan(life.source):
                    await stack.enter_async_context(life.source.lifespan())
                life.open = True
                self.state = "running"
                try:
                    async with anyio.create_task_group() as tasks:
                        self._scope = tasks.cancel_scope
                        if self._stopping:
                            self.stop()
                        self._pool, self._idle = 1, 0
                        tasks.start_soon(self._work, life, tasks)
                        if self._idle_timeout is not None:
                            with anyio.CancelScope() as life.watch:
                                passivated = await self._until_idle(life, self._idle_timeout)
                            if passivated:
                                tasks.cancel_scope.cancel()
                finally:
                    life.open = False
                    await self._drain(life)
        self._scope = None
        return passivated and not self._stopping

    async def _until_idle(self, life: _Life, idle: float) -> bool:
        """Wait until ``life`` has had nothing in flight for ``idle`` seconds; then it takes
        no more inline calls and ``True`` is returned (the caller ends the incarnation). Returns
        ``False`` if the incarnation is ending otherwise first (a stop, a crash)."""
        life.quiet = anyio.current_time()
        while life.open and not self._stopping:
            await anyio.sleep_until(life.quiet + idle)
            if life.running:
                # Busy: its last call's end notes a later quiet; look again a timeout later.
                await anyio.sleep(idle)
            elif anyio.current_time() >= life.quiet + idle:
                # Decided with no await since looking, so no call started in between; the
                # incarnation's end (its workers cancelled now) lets no inline call start.
                self.passivations += 1
                _log.info("actor.passivated", source=self.name, idle_timeout=idle)
                return True
        return False

    async def _drain(self, life: _Life) -> None:
        """Cancel the inline calls still running (the workers are over) and wait until they
        are, shielded and at most ``grace``, before the lifespan is left."""
        if not life.running:
            return
        life.drained = anyio.Event()
        _cancel_running(life)
        with anyio.move_on_after(self._grace, shield=True):
            await life.drained.wait()
            return
        # The source ignores cancellation (it was spawned inline all the same): its calls go on
        # in their callers' tasks, answered as the end cut them short whatever they return.
        _log.error("actor.calls_left", source=self.name, calls=len(life.running))
        life.cut.extend(life.running)

    async def _work(self, life: _Life, tasks: TaskGroup) -> None:
        mailbox, slots = self.mailbox, life.slots
        with anyio.CancelScope() as scope:
            while not scope.cancel_called:
                self._idle += 1
                try:
                    await mailbox.wait()
                except anyio.EndOfStream:
                    return
                finally:
                    self._idle -= 1
                if self._idle == 0 and self._pool < self._max_concurrency:
                    self._pool += 1
                    tasks.start_soon(self._work, life, tasks)
                if not slots.take_now():
                    # Inline calls hold every slot: the worker waits for one in turn, holding
                    # nothing; the requests keep their places in the mailbox (so a crash or a
                    # stop finds them there, and a deadline's passing ends nothing of them).
                    await slots.take()
                try:
                    # With its slot it takes the requests that wait, one after another: the next
                    # starts in the turn of the loop the last one ended in, not a turn later in
                    # another worker, so that what the calls share (a pool of connections) is
                    # handed on at once rather than left idle in between.
                    while (request := mailbox.take()) is not None:
                        # One whose caller left, or whose deadline passed (its caller, maybe not
                        # woken yet, answers it then): it never starts.
                        if not (request.abandoned or _late(request)):
                            await self._serve(life, request, scope)
                            if scope.cancel_called:
                                break
                finally:
                    slots.give_back()
        # This worker's scope stopped its call (the caller left, or the deadline passed): a
        # fresh worker takes its place, with a scope nobody has cancelled.
        tasks.start_soon(self._work, life, tasks)

    async def _serve(self, life: _Life, request: Request, scope: anyio.CancelScope) -> None:
        request.scope = scope
        request.started = True
        if request.deadline != math.inf:
            scope.deadline = request.deadline
        life.running.add(request)
        try:
            await self._attempt(life.source, request)
        finally:
            request.scope = None
            life.running.discard(request)
            if not life.running:
                self._quiet(life)
            if not request.done:
                self._unanswered(life, request, cancelled=scope.cancel_called)
            if request.deadline != math.inf and not scope.cancel_called:
                scope.deadline = math.inf

    async def _attempt(self, source: ToolSource, request: Request) -> None:
        """Run a request and answer it: its value, the ``ToolSourceError`` it raised, or
        ``UnknownError`` for any other exception (a defect, logged). A ``BaseException`` that is
        no ``Exception`` (cancellation, ``KeyboardInterrupt``) propagates, leaving it unanswered.
        """
        try:
            # The caller's listener, carried across the mailbox, hears the call's progress.
            with listening(request.progress if isinstance(request, Call) else None):
                request.resolve(await request.run(source))
        except Exception as error:  # noqa: BLE001 - answered (see _failed)
            self._failed(request, error)

    def _failed(self, request: Request, error: Exception) -> None:
        """Answer a request whose run raised ``error``: a ``ToolSourceError`` as itself, any
        other exception as ``UnknownError`` (a defect, logged here with its traceback)."""
        if isinstance(error, ToolSourceError):
            request.fail(error)
            return
        _log.error("call.defect", source=self.name, tool=request.what, exc_info=error)
        request.fail(UnknownError(source=self.name, message=f"defect: {error!r}"))

    def _unanswered(self, life: _Life, request: Request, *, cancelled: bool) -> None:
        """Answer a request whose call ended with no answer. ``cancelled``: the scope the actor
        gave it was (its deadline, its caller leaving, a stop, or for an inline call the
        incarnation's end); else the incarnation's end cancelled the worker running it."""
        if cancelled and life.open and not (self._stopping or request.abandoned):
            request.fail(timed_out(self.name, request.what, "call_timeout"))
        elif self._stopping or (cancelled and life.open):
            # Stopped, or its caller left (and reads nothing).
            request.fail(UnavailableError(source=self.name, message=_STOPPED_WHILE))
        elif life.why is not None:
            request.fail(UnavailableError(source=self.name, message=life.why))
        else:
            # Cut by the incarnation's end (a crash): answered with its cause once it is known.
            life.cut.append(request)


def _late(request: Request) -> bool:
    """Whether a request's deadline has passed (a slot may come in the turn of the loop its
    deadline passes in, before its caller is woken by it)."""
    return request.deadline != math.inf and request.deadline <= anyio.current_time()


def _cancel_running(life: _Life) -> None:
    """Cancel every call running in an incarnation, in a worker or in its caller's task."""
    for request in list(life.running):
        if request.scope is not None:
            request.scope.cancel()


def described(error: BaseException) -> str:
    """A crash in a line, the one error inside a task group's group when there is one."""
    error = sole(error)
    return f"{type(error).__name__}: {error}"
