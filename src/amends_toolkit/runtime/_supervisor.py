"""The supervisor: the runtime is the root of a tree of actors (OTP's one_for_one).

Each spawned source is a child: what builds it (the source itself, whose lifespan builds its
state anew, or a function that builds a new source), its options and its restart policy. The
supervisor runs the child's incarnations one after another in a task of the child's own and
decides what follows each end.

The runtime is a task group (structured concurrency): a child whose source declares
``honours_cancellation`` (every built-in source does; for a function given to ``spawn``, the
first source it builds decides) runs in the task group the runtime enters with its block, so
none outlives the block. Only a child whose source does not declare it runs detached
(``asyncio`` task, trio system task), since no task group can be left while a task in it still
runs, and a stop must be able to leave behind, after ``grace``, a child that ignores it. What ends
a child's supervisor other than a crash (a ``KeyboardInterrupt``, a ``SystemExit``) is handed to
the runtime, detached child or not: it cancels the host's block and leaves it as itself, on both
backends. On asyncio, one raised in another task (a worker's call, a task of a lifespan) is the
event loop's own to raise, as asyncio does with every task's, before any task group hears it.

Rules of the runtime:

=====================  ======================================================================
What happens           What the caller gets
=====================  ======================================================================
a call runs            its own answer; calls run concurrently, up to ``max_concurrency``
the actor has room     (``inline``, on for a source that declares ``honours_cancellation``)
                       the call runs in the caller's own task, with the same answers as below;
                       else, or while anything waits in the mailbox, it goes through the
                       mailbox in order; ``max_concurrency`` bounds both kinds together
one caller has         (``max_per_caller``, the caller named by ``calling_as``) its next call
``max_per_caller``     waits in a line of its caller's own, outside the mailbox, until one of
calls in the actor     them is answered: other callers' calls take the free slots (inline or
(queued or running)    through the mailbox) as if it were not there; calls of no named caller
                       have no share; the deadline, a cancellation, a stop end that wait as
                       they end one in the mailbox
the source fails       the ``ToolSourceError`` it raised
a defect in a call     ``UnknownError`` ("the source failed"), logged with its traceback; the
                       actor keeps serving
the deadline passes    ``UnavailableError``; the call is cancelled inside the actor; a caller
                       waits at most ``grace`` longer for a source that ignores cancellation
                       (one through the mailbox: an inline call holds its caller); a call
                       not started by then (queued, waiting to be queued, or waiting for its
                       caller's share) never runs
the caller is          its call is cancelled inside the actor, or never starts if it still
cancelled              waits in the mailbox or for its caller's share; nothing is reported
an inline call raises  (one that is no cancellation: ``KeyboardInterrupt``, ``SystemExit``)
a ``BaseException``    it reaches its caller as it was raised
the actor crashes      (its lifespan, or a task it runs, raises anything but a cancellation, a
                       ``KeyboardInterrupt`` or a ``SystemExit``: an ``Exception`` or any other
                       ``BaseException``, on either backend) running calls (inline ones too)
                       get ``UnavailableError`` with the crash's cause; the source's lifespan
                       is left once its inline calls are over (at most ``grace``); a
                       ``permanent`` or ``transient`` child is restarted from fresh state, and
                       queued calls (those waiting for a slot too) wait for the new incarnation;
                       ``actor.crashed`` is logged, with the traceback only of a defect (a
                       ``ToolSourceError`` or an ``OSError`` is logged in its words)
it ends by itself      (``NormalExit``) only a ``permanent`` child is restarted
more than              the supervisor gives up (a ``temporary`` child at its first crash):
``intensity`` crashes  every queued and later call gets ``UnavailableError``, never a hang,
within ``period``      and the runtime's ``on_give_up`` hears of it
the child is stopped   (``runtime.stop(ref)``, or the runtime stops) every queued and running
                       call (inline too) gets ``UnavailableError``; the runtime forgets the child
it ignores a stop      (its source does not declare ``honours_cancellation``: its child runs
                       detached) after ``grace`` it is abandoned: its callers are answered, the
                       runtime forgets it and logs ``actor.abandoned`` naming it
it declares it         (its child runs in the runtime's task group) after ``grace`` its callers
honours cancellation   are answered, the runtime forgets it and logs ``actor.overdue`` naming
and ignores a stop     it; leaving the runtime still waits for it (nothing outlives the block)
the program exits      (a ``KeyboardInterrupt`` or ``SystemExit`` reaches a child's supervisor,
in a child             a detached one's too: raised in the child's own task, as its lifespan's
                       entry and exit are, or on trio in any task of the child) the host's
                       block is cancelled, every child stopped as at leaving, and the exception
                       leaves the block as itself: no crash of the child, and on trio no
                       ``TrioInternalError``; on asyncio the event loop itself raises one
                       raised in any other task (a worker's call, a task of the lifespan)
nothing in flight for  (``idle_timeout``) the incarnation ends as at a stop, its source's
``idle_timeout``       lifespan left (an MCP session ended, a process stopped), and the actor is
                       ``passivated``: no crash, no restart counted; its next call or discover
                       waits in the mailbox while one new incarnation starts, from fresh state
                       (a factory builds the source again), however many calls come at once;
                       an actor spawned with ``idle_timeout`` starts passivated
the mailbox is full    (``mailbox_size`` requests wait, those waiting for a slot included) the
                       caller waits to send (backpressure), within its own cancel scope and
                       its deadline, in turn: no later caller, inline or not, overtakes it
=====================  ======================================================================
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import math
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio
import attrs
import sniffio

from amends_toolkit._errors import ToolSourceError, sole
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_optional_seconds, check_seconds
from amends_toolkit.runtime._actor import Actor, described
from amends_toolkit.runtime._mailbox import Mailbox, Shares
from amends_toolkit.runtime._messages import waiters
from amends_toolkit.runtime._ref import ActorRef
from amends_toolkit.runtime._source import (
    NormalExit,
    ToolSource,
    honours_cancellation,
    is_source,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine
    from types import TracebackType

    from anyio.abc import TaskGroup

__all__ = ("GiveUp", "Restart", "RestartPolicy", "Runtime", "SourceFactory")

_log = get_logger(__name__)

RestartPolicy: TypeAlias = Literal["permanent", "transient", "temporary"]
"""OTP's: restart always, only after a crash, or never."""

SourceFactory: TypeAlias = "Callable[[], ToolSource]"
"""A function that builds a new source, called for each incarnation of its actor."""

GiveUp: TypeAlias = "Callable[[ActorRef, BaseException], Awaitable[None] | None]"
"""The host's ear: called (and awaited, if it gives an awaitable) when a child is given up."""

_POLICIES = ("permanent", "transient", "temporary")


@attrs.frozen(kw_only=True)
class Restart:
    """When a supervisor restarts a child (OTP's restart type, intensity and period).

    Attributes:
        policy: ``"permanent"`` restarts the child whenever it ends by itself (a crash or a
            ``NormalExit``); ``"transient"`` only after a crash; ``"temporary"`` never: the
            first crash gives it up.
        intensity: Restarts allowed within ``period``: one more crash gives the child up, and
            its source answers ``UnavailableError`` to every call from then on. ``0`` never
            restarts.
        period: The window, in seconds, in which restarts are counted.
    """

    policy: RestartPolicy = "permanent"
    intensity: int = 3
    period: float = 5.0

    def __attrs_post_init__(self) -> None:
        if self.policy not in _POLICIES:
            raise ValueError(
                f"Restart policy must be 'permanent', 'transient' or 'temporary', not {self.policy!r}"
            )
        if isinstance(self.intensity, bool) or not isinstance(self.intensity, int):
            raise TypeError(f"Restart intensity must be an int, not {self.intensity!r}")
        if self.intensity < 0 or not (self.period > 0 and math.isfinite(self.period)):
            raise ValueError("Restart needs intensity >= 0 and a positive, finite period")


_RESTART = Restart()


@attrs.define(kw_only=True, eq=False)
class _Child:
    """A child of the runtime, as its supervisor sees it."""

    actor: Actor
    ref: ActorRef
    first: ToolSource | None
    factory: SourceFactory | None
    restart: Restart
    detached: bool
    done: anyio.Event = attrs.field(factory=anyio.Event)


class Runtime:
    """The root supervisor: hosts tool sources as supervised actors, in a task group of its own.

    ``async with at.Runtime() as runtime:``; leaving the block stops every child at once, each
    answering its waiting callers (``UnavailableError``) and leaving its source's lifespan, and
    then leaves the runtime's task group. A child whose source declares
    ``honours_cancellation`` runs in that task group, so none outlives the block; a child whose
    source does not runs detached, and one that has not stopped ``grace`` seconds later (it
    ignores cancellation) is abandoned and logged (``actor.abandoned``), so leaving takes at
    most about ``grace`` for it. An exception of the block leaves it as itself (no
    ``ExceptionGroup``), and so does a ``KeyboardInterrupt`` or ``SystemExit`` that ended a
    child's supervisor (it cancels the block first, as in any task group).

    A runtime is entered once, and left in the task that entered it (anyio's rule for a task
    group: a pytest fixture, a Starlette lifespan or an ``AsyncExitStack`` does so); leaving it
    in another task raises ``RuntimeError`` and changes nothing. ``spawn``, ``stop`` and
    ``children`` may be called from any task of the event loop.

    Args:
        grace: Seconds a source that ignores cancellation is waited for: by a caller past its
            ``call_timeout``, and when a child is stopped.
        on_give_up: Called with a child's ref and the error of its last crash when its supervisor
            gives it up; awaited if it gives an awaitable. Its own exceptions are logged.
    """

    def __init__(self, *, grace: float = 5.0, on_give_up: GiveUp | None = None) -> None:
        check_seconds(grace=grace)
        self._grace = grace
        self._on_give_up = on_give_up
        self._children: dict[ActorRef, _Child] = {}
        self._state: Literal["new", "open", "closed"] = "new"
        self._tasks: TaskGroup | None = None
        # The host's block, inside the task group: what a child passes on cancels it alone, so
        # that the children are still stopped in order as it is left.
        self._block: anyio.CancelScope | None = None
        self._host: int | None = None
        # What ended a child's supervisor other than a crash: raised as the runtime is left.
        self._leaving: BaseException | None = None

    async def __aenter__(self) -> Runtime:
        if self._state != "new":
            raise RuntimeError("a Runtime is entered once")
        tasks = anyio.create_task_group()
        await tasks.__aenter__()
        block = anyio.CancelScope()
        block.__enter__()
        self._tasks, self._block, self._host = tasks, block, anyio.get_current_task().id
        self._state = "open"
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if anyio.get_current_task().id != self._host:
            # Refused before anything changes: the task that entered it can still leave it.
            raise RuntimeError(
                "a Runtime must be left in the task that entered it (its children run in a task "
                "group, which anyio leaves only in the task that entered it): enter and leave it "
                "in one task, as one `async with` block or one AsyncExitStack does"
            )
        self._state = "closed"
        tasks, block = self._tasks, self._block
        assert tasks is not None  # entered, and left once
        assert block is not None
        self._block = None
        # Its own cancellation (a child passed on the program's exit) ends here.
        caught = block.__exit__(kind, error, traceback)
        # Stopping is cleanup: it runs whatever ended the block, and is bounded by the grace.
        try:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as stopping:
                    for child in list(self._children.values()):
                        stopping.start_soon(self._stop, child)
        except BaseException as interrupted:
            # Only a cancellation that is none of anyio's reaches through the shield: asyncio's
            # Task.cancel(), as its runner does at Ctrl-C. The task group is left all the same
            # (its children cancelled), so that every scope around the Runtime is left in order.
            self._tasks = None
            await tasks.__aexit__(type(interrupted), interrupted, interrupted.__traceback__)
            raise
        self._tasks = None
        # The children's task group hears of the block's exception only a cancellation from
        # outside (its scope may be cancelled too), so that the block's own exception leaves it
        # as itself, not in an ExceptionGroup; its answer is for no exception (trio's is True).
        if not caught and isinstance(error, anyio.get_cancelled_exc_class()):
            caught = await tasks.__aexit__(kind, error, traceback)
        else:
            await tasks.__aexit__(None, None, None)
        if self._leaving is not None:
            leaving, self._leaving = self._leaving, None
            raise leaving
        return bool(caught)

    def children(self) -> tuple[ActorRef, ...]:
        """The refs of the children alive now (neither stopped nor given up), oldest first.

        Each ref's ``statistics()`` says how it is doing.
        """
        return tuple(self._children)

    async def stop(self, ref: ActorRef) -> None:
        """Stop one child and wait until it has (at most ``grace`` seconds for a source that
        ignores cancellation); the runtime forgets it. Its waiting callers get
        ``UnavailableError``, and so does every later call. A child already gone is left be."""
        child = self._children.get(ref)
        if child is not None:
            with anyio.CancelScope(shield=True):
                await self._stop(child)

    async def spawn(
        self,
        source: ToolSource | SourceFactory,
        *,
        max_concurrency: int = 64,
        mailbox_size: int = 256,
        call_timeout: float | None = None,
        restart: Restart = _RESTART,
        inline: bool | None = None,
        max_per_caller: int | None = None,
        idle_timeout: float | None = None,
    ) -> ActorRef:
        """Start a child for ``source`` and return its ref, itself a ToolSource.

        Args:
            source: A source (``name``, ``discover``, ``call``; one with ``lifespan()`` holds it
                while the actor runs, and each restart enters it again, so a source that keeps
                its state in its lifespan, as the built-in ones do, starts each incarnation
                fresh), or a function that builds a new source, called for each incarnation.
            max_concurrency: Calls that run at once inside the actor; more wait in the mailbox.
                Set above the connections of the client a source sends over, the calls
                beyond them wait in the client's pool (under its pool timeout) instead; see
                docs/concepts/runtime.md, "max_concurrency and the client's pool".
            mailbox_size: Requests that wait; beyond it a caller waits to send (backpressure).
            call_timeout: Seconds a request may take before it ends as ``UnavailableError``.
            restart: When a child that ends by itself is restarted.
            inline: Run a call in its caller's own task when the actor has room for it (it
                runs, a worker is free, nothing waits in its mailbox nor to be put in it, and
                fewer than ``max_concurrency`` calls run), saving the two hops through the
                mailbox; else the call goes through the mailbox, in order. ``None``: inline
                when the source declares ``honours_cancellation = True``, as every built-in
                source does. An inline call is cancelled by its deadline, a stop or a crash as a
                worker's is, but no ``grace`` frees its caller from a source that ignores
                cancellation; a ``BaseException`` that is no cancellation
                (``KeyboardInterrupt``, ``SystemExit``) reaches the caller.
            max_per_caller: Calls of one caller (named by :func:`calling_as`) in the actor at
                once, queued or running: the caller's next call waits in a line of its own,
                outside the mailbox, while other callers' calls take the free slots, so one
                caller cannot take every slot. ``None``: no share; calls made with no caller
                named have none either.
            idle_timeout: Seconds with nothing in flight (no call or discover running) after
                which the actor ends its incarnation normally, its source's lifespan left (an
                MCP session ends with DELETE, a stdio process stops): an idle actor holds no
                session, process or worker, only its ref, its mailbox and one waiting task. Its
                next call or discover starts a new incarnation from fresh state (a factory
                builds its source again) and waits for it, however many come at once: one
                starts. The ref and its statistics stay valid (``state`` is ``"passivated"``);
                a passivation is no crash and counts for no restart. An actor spawned with it
                starts passivated: its first call starts it. ``None``: it runs until stopped.

        Raises:
            ValueError: a bad option (a programmer's mistake, raised at once).
            TypeError: ``source`` is neither a source nor a function that builds one.
            RuntimeError: the runtime is not entered, or was left.
        """
        if self._state != "open":
            raise RuntimeError("spawn needs an entered Runtime: async with at.Runtime() as runtime")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise TypeError("max_concurrency must be an int")
        if isinstance(mailbox_size, bool) or not isinstance(mailbox_size, int):
            raise TypeError("mailbox_size must be an int")
        if max_concurrency < 1 or mailbox_size < 0:
            raise ValueError("spawn needs max_concurrency >= 1 and mailbox_size >= 0")
        check_optional_seconds(call_timeout=call_timeout, idle_timeout=idle_timeout)
        if not isinstance(restart, Restart):
            raise TypeError(f"restart must be an at.Restart, not {restart!r}")
        if max_per_caller is not None and (
            isinstance(max_per_caller, bool) or not isinstance(max_per_caller, int)
        ):
            raise TypeError("max_per_caller must be an int, or None for no share per caller")
        if max_per_caller is not None and max_per_caller < 1:
            raise ValueError("spawn needs max_per_caller >= 1, or None for no share per caller")
        if inline is not None and not isinstance(inline, bool):
            raise TypeError(
                f"inline must be True, False or None (the source decides), not {inline!r}"
            )
        factory: SourceFactory | None = None
        if not is_source(source):
            if not callable(source):
                raise TypeError(
                    "spawn takes a tool source (name, discover, call) or a function that builds "
                    f"one, not {source!r}"
                )
            factory = source
            source = _built(factory)
        honours = honours_cancellation(source)
        if inline is None:
            inline = honours
        make = waiters()
        mailbox = Mailbox(mailbox_size, make)
        actor = Actor(
            name=source.name,
            mailbox=mailbox,
            waiters=make,
            max_concurrency=max_concurrency,
            grace=self._grace,
            idle_timeout=idle_timeout,
        )
        ref = ActorRef(
            name=source.name,
            mailbox=mailbox,
            waiters=make,
            call_timeout=call_timeout,
            grace=self._grace,
            statistics=actor.statistics,
            inline=actor.inline if inline else None,
            shares=None if max_per_caller is None else Shares(max_per_caller, make),
        )
        # One that may ignore cancellation runs detached, so that a stop can leave it behind.
        child = _Child(
            actor=actor,
            ref=ref,
            first=source,
            factory=factory,
            restart=restart,
            detached=not honours,
        )
        assert self._tasks is not None  # open
        self._children[ref] = child
        if child.detached:
            _start_detached(lambda: self._run(child))
        else:
            self._tasks.start_soon(self._run, child, name=f"actor {source.name}")
        return ref

    async def _stop(self, child: _Child) -> None:
        child.actor.stop()
        with anyio.move_on_after(self._grace):
            await child.done.wait()
            return
        # Its source ignores cancellation: answer its callers and forget it. A detached child is
        # left be; one in the task group (its source declared otherwise) is waited for there.
        if child.detached:
            _log.error("actor.abandoned", source=child.actor.name, grace=self._grace)
        else:
            _log.error("actor.overdue", source=child.actor.name, grace=self._grace)
        child.actor.close("stopped", "the source is stopped")
        self._children.pop(child.ref, None)

    async def _run(self, child: _Child) -> None:
        try:
            await self._supervise(child)
        except BaseException as error:
            # Ended by a cancellation or by the program's exit, its supervisor answered nobody.
            if self._children.get(child.ref) is child:
                del self._children[child.ref]
                child.actor.close("stopped", "the source is stopped")
            leaving = _program_exit(error)
            if leaving is None:
                raise
            self._pass_on(child, leaving)
        finally:
            child.done.set()

    def _pass_on(self, child: _Child, leaving: BaseException) -> None:
        """Hand the program's exit that ended a child to the host's block: kept for the runtime
        to raise as it is left, and the block cancelled now, as a task group's would be (its
        children then stopped in order, as at any leaving).

        Raised from the child's own task instead, it would skip the task group on asyncio (the
        event loop raises a task's ``KeyboardInterrupt`` or ``SystemExit`` itself), and a
        detached child's on trio would end the program with a ``TrioInternalError``.
        """
        tasks = self._tasks
        if tasks is None:
            # Abandoned, it ended after the runtime was left: the event loop is all that is left
            # to hear it.
            _log.error("actor.abandoned_exit", source=child.actor.name, exc_info=leaving)
            raise leaving
        if self._leaving is None:
            self._leaving = leaving
        if self._block is not None:
            self._block.cancel()

    async def _supervise(self, child: _Child) -> None:
        actor = child.actor
        crashes: list[float] = []  # a deque costs 700 bytes an idle actor would hold
        source, child.first = child.first, None
        gave_up: BaseException | None = None
        # Spawned with an idle timeout, it starts as it is after a passivation.
        passivated, crashed = actor.state == "passivated", False
        while True:
            if passivated:
                if not await actor.wait_for_request():
                    break
                passivated = False
            actor.state = "restarting" if crashed else "starting"
            try:
                if source is None:
                    assert child.factory is not None  # a source is built again only by one
                    source = _built(child.factory, name=actor.name)
                passivated = await actor.serve(source)
            except BaseException as error:
                if _passes_on(error):
                    raise
                if actor.stopping:
                    break
                if _normal(error):
                    _log.info("actor.ended", source=actor.name)
                    if child.restart.policy != "permanent":
                        break
                else:
                    _log_crash(actor.name, error)
                    if child.restart.policy == "temporary":
                        gave_up = error
                        break
                now = anyio.current_time()
                crashes.append(now)
                while crashes and crashes[0] <= now - child.restart.period:
                    del crashes[0]
                if len(crashes) > child.restart.intensity:
                    gave_up = error
                    break
                actor.restarts += 1
                _log.warning("actor.restarted", source=actor.name, restarts=actor.restarts)
                if child.factory is not None:
                    source = None
                crashed = True
                continue
            if passivated:
                # Idle: no crash, and the next incarnation starts from fresh state.
                crashed = False
                if child.factory is not None:
                    source = None
                continue
            break
        self._children.pop(child.ref, None)
        if gave_up is None:
            actor.close("stopped", "the source is stopped")
            return
        _log.error("actor.given_up", source=actor.name, restarts=actor.restarts)
        # For the host (a model reads UnavailableError's default words only): why it gave up.
        actor.close("failed", f"the source gave up; its last crash: {described(gave_up)}")
        if self._on_give_up is not None:
            try:
                heard = self._on_give_up(child.ref, gave_up)
                if inspect.isawaitable(heard):
                    await heard
            except Exception as error:  # noqa: BLE001 - the host's callback: logged for the host
                _log.error("runtime.on_give_up_failed", source=actor.name, exc_info=error)


def _built(factory: SourceFactory, *, name: str | None = None) -> ToolSource:
    source = factory()
    if not is_source(source):
        raise TypeError(
            f"the function given to spawn must build a tool source, and it built {source!r}"
        )
    if name is not None and source.name != name:
        raise ValueError(f"the source built again is named {source.name!r}, not {name!r}")
    return source


def _log_crash(name: str, error: BaseException) -> None:
    """``actor.crashed``: in the crash's own words when its cause is a failure that says itself
    (a ``ToolSourceError``; an ``OSError``, the machine's or the peer's, not the code's: a
    command that could not start, a server process that ended), with its traceback when it is
    a defect."""
    if isinstance(sole(error), (ToolSourceError, OSError)):
        _log.error("actor.crashed", source=name, error=described(error))
    else:
        _log.error("actor.crashed", source=name, exc_info=error)


def _passes_on(error: BaseException) -> bool:
    """Whether a child's end is none of its own: a cancellation, or the program's own exit
    (``KeyboardInterrupt``, ``SystemExit``), which go on to the runtime's task group. Any other
    exception, an ``Exception`` or not, is the child's crash, which its supervisor handles."""
    passing = (anyio.get_cancelled_exc_class(), KeyboardInterrupt, SystemExit)
    if isinstance(error, BaseExceptionGroup):
        return error.split(passing)[0] is not None
    return isinstance(error, passing)


def _normal(error: BaseException) -> bool:
    """Whether an incarnation ended as its source meant to (only ``NormalExit`` inside)."""
    if isinstance(error, BaseExceptionGroup):
        return all(_normal(inner) for inner in error.exceptions)
    return isinstance(error, NormalExit)


def _program_exit(error: BaseException) -> BaseException | None:
    """The ``KeyboardInterrupt`` or ``SystemExit`` in what ended a child (the first, in a group),
    or ``None`` for a cancellation."""
    if isinstance(error, BaseExceptionGroup):
        found: BaseException | None = error.split((KeyboardInterrupt, SystemExit))[0]
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        return found
    return error if isinstance(error, (KeyboardInterrupt, SystemExit)) else None


_DETACHED: set[asyncio.Task[None]] = set()


def _start_detached(run: Callable[[], Coroutine[object, object, None]]) -> None:
    """Run a child whose source may ignore cancellation in a task of its own, outside the
    runtime's task group.

    Such a child must be able to outlive a stop (it is abandoned after the grace), which no
    task group allows, since none is left while a task in it runs; every child is still asked to
    stop when the runtime is left.
    """
    if sniffio.current_async_library() == "asyncio":
        task = asyncio.get_running_loop().create_task(run())
        _DETACHED.add(task)
        task.add_done_callback(_DETACHED.discard)
        return
    import trio  # the other backend anyio runs on; loaded only when it runs

    trio.lowlevel.spawn_system_task(run, context=contextvars.copy_context())
