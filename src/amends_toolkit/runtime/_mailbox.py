"""An actor's mailbox: a bounded queue between callers and the actor's workers.

It holds up to ``size`` requests besides those an idle worker is about to take (so ``size=0``
hands a request only to a worker that waits for one, as a memory stream of buffer 0 does), those
waiting for a slot included (a worker takes one only with a slot: :meth:`Mailbox.wait`); a
caller beyond that waits for room (backpressure), in turn: a newcomer never overtakes a caller
that waits (nor does an inline call: :attr:`Mailbox.ready`), and one woken keeps its turn until
it runs. Waiting is on one-shot waiters, which are the loop's futures on asyncio: the cheapest
wake-up there is, since the mailbox is the hop every call of an actor takes. As in
``asyncio.Queue``, a request stays in the queue until a worker takes it, and a waiter woken and
then cancelled passes its turn on, so no request and no room is lost.

:class:`Slots` bounds the calls that run at once in an actor, those its workers took from the
mailbox and those run in their callers' own tasks, with the same waiters and the same care.
:class:`Shares` bounds each caller's calls in an actor, with one :class:`Slots` per caller that
has calls: a caller past its share waits in a line of its own, before the mailbox, so no other
caller's call ever waits behind it.
"""

from __future__ import annotations

from collections import deque
from contextlib import suppress
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

    from amends_toolkit.runtime._messages import Request, Waiter

__all__ = ("Mailbox", "Shares", "Slots")


class Mailbox:
    """Requests waiting for a worker; :meth:`put` from any task, :meth:`get` from workers."""

    __slots__ = ("_called", "_closed", "_getters", "_new", "_putters", "_queue", "_size", "why")

    def __init__(self, size: int, waiters: Callable[[], Waiter]) -> None:
        self._size = size
        self._new = waiters
        self._queue: deque[Request] = deque()
        self._getters: deque[Waiter] = deque()
        # Callers waiting to put, in turn: those not woken yet, and those woken (each given a
        # place) that have not run yet, which stay ahead of any newcomer. Two lines, so that
        # waking the next caller never walks past the ones woken already.
        self._putters: deque[Waiter] = deque()
        self._called: deque[Waiter] = deque()
        self._closed = False
        self.why = ""

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def ready(self) -> bool:
        """Whether nothing waits in the mailbox nor to be put in it, and a worker waits for a
        request, not cancelled: a crash or a stop of its incarnation cancels its waiter at once,
        before any task runs again."""
        return (
            not self._queue
            and not self._putters
            and not self._called
            and bool(self._getters)
            and not self._getters[0].done()
        )

    @property
    def closed(self) -> bool:
        """Whether the mailbox takes no more requests."""
        return self._closed

    async def put(self, request: Request) -> None:
        """Queue a request, waiting for room when the mailbox is full, behind any caller that
        waits already (one woken keeps its turn until it runs).

        Raises:
            anyio.ClosedResourceError: the mailbox is closed (the actor stopped or gave up).
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if not (self._putters or self._called) and self._room():
            self._queue.append(request)
            _wake(self._getters)
            return
        waiter = self._new()
        self._putters.append(waiter)
        try:
            while True:
                await waiter
                # A caller cancelled while it waited must not send now: on asyncio, anyio
                # delivers a cancellation to a task woken at the same moment only later.
                await anyio.lowlevel.checkpoint_if_cancelled()
                if self._closed:
                    raise anyio.ClosedResourceError
                if self._room():
                    break
                # The room went before it ran (a worker left): it waits again, still first.
                _off(self._called, waiter)
                waiter = self._new()
                self._putters.appendleft(waiter)
            self._queue.append(request)
            _wake(self._getters)
        finally:
            # Off its line (close() took it off already): woken, it is near the head of
            # _called, as the callers woken before it have run.
            if not _off(self._called, waiter):
                _off(self._putters, waiter)
            self._call_putters()  # the room left, or the turn it was given, goes to the next

    async def get(self) -> Request:
        """Take the oldest request, waiting for one.

        Raises:
            anyio.EndOfStream: the mailbox is closed.
        """
        while True:
            await self.wait()
            request = self.take()
            if request is not None:
                return request

    async def wait(self) -> None:
        """Wait until a request waits here, without taking it: a worker then waits for a slot
        before it takes one, and the request keeps its place in the line meanwhile.

        Raises:
            anyio.EndOfStream: the mailbox is closed.
        """
        while not self._queue:
            if self._closed:
                raise anyio.EndOfStream
            waiter = self._new()
            self._getters.append(waiter)
            # A caller that waits to put (in a mailbox of size 0) can now hand its request over.
            self._call_putters()
            try:
                await waiter
            except BaseException:
                _leave(self._getters, waiter)
                raise

    def take(self) -> Request | None:
        """The oldest request, taken at once, or ``None`` when none waits."""
        if not self._queue:
            return None
        request = self._queue.popleft()
        self._call_putters()
        return request

    def _room(self) -> bool:
        """Whether a request can be put now: below ``size``, or a worker waits for one."""
        return len(self._queue) < self._size or bool(self._getters)

    def _call_putters(self) -> None:
        """Wake the callers waiting to put, first in line first, as many as there is room for
        (one woken stays first in line until it runs, so no newcomer and no later caller
        overtakes it; several are woken at once when several places opened, so that putting
        never becomes one caller per turn of the loop)."""
        room = self._size - len(self._queue) + len(self._getters) - len(self._called)
        putters = self._putters
        while room > 0 and putters:
            waiter = putters.popleft()
            if not waiter.done():  # else cancelled: it leaves by itself, and takes no room
                waiter.set_result(None)
                self._called.append(waiter)
                room -= 1

    def close(self, why: str) -> list[Request]:
        """Take no more requests (``why`` says why); wake every waiting task, give those left."""
        self._closed = True
        self.why = why
        left = list(self._queue)
        self._queue.clear()
        for waiters in (self._getters, self._putters, self._called):
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
        return left


class Slots:
    """Room for ``count`` calls at once: taken at once when free, else waited for in turn.

    A slot given back while a task waits is handed to it, never left free for a newcomer, so
    whoever waits is served first.
    """

    __slots__ = ("_count", "_free", "_new", "_waiting")

    def __init__(self, count: int, waiters: Callable[[], Waiter]) -> None:
        self._count = count
        self._free = count
        self._new = waiters
        self._waiting: deque[Waiter] = deque()

    @property
    def unused(self) -> bool:
        """Whether every slot is free (so no task holds one or waits for one)."""
        return self._free == self._count

    def take_now(self) -> bool:
        """Take a slot if one is free (none is while a task waits for one); never waits."""
        if self._free:
            self._free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take a slot, waiting in turn for one given back (cancellation leaves the line)."""
        if self.take_now():
            return
        waiter = self._new()
        self._waiting.append(waiter)
        try:
            await waiter
            # As in Mailbox.put: a task cancelled as it was handed a slot must not use it.
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give_back()  # it was handed one: the next in line has it
            else:
                with suppress(ValueError):
                    self._waiting.remove(waiter)
            raise

    def give_back(self) -> None:
        """Give a slot back: to the first task that waits for one, else free."""
        if not _wake(self._waiting):
            self._free += 1


class Shares:
    """Each caller's share of an actor: at most ``count`` calls of one caller at once.

    A caller past its share waits in turn for one of its own calls to end (:class:`Slots`, one
    per caller); only callers with calls held or waiting are kept, so what a share costs ends
    with its caller's calls.
    """

    __slots__ = ("_count", "_held", "_new")

    def __init__(self, count: int, waiters: Callable[[], Waiter]) -> None:
        self._count = count
        self._new = waiters
        self._held: dict[str, Slots] = {}

    def __len__(self) -> int:
        return len(self._held)

    def take_now(self, caller: str) -> bool:
        """Take a place in ``caller``'s share if one is free; never waits."""
        return self._slots(caller).take_now()

    async def take(self, caller: str) -> None:
        """Take a place in ``caller``'s share, waiting in turn for one of its calls to end
        (cancellation leaves the line)."""
        slots = self._slots(caller)
        try:
            await slots.take()
        except BaseException:
            self._forget(caller, slots)
            raise

    def give_back(self, caller: str) -> None:
        """Give ``caller``'s place back: to its next call that waits, else free."""
        slots = self._held[caller]
        slots.give_back()
        self._forget(caller, slots)

    def _slots(self, caller: str) -> Slots:
        slots = self._held.get(caller)
        if slots is None:
            slots = self._held[caller] = Slots(self._count, self._new)
        return slots

    def _forget(self, caller: str, slots: Slots) -> None:
        if slots.unused:
            del self._held[caller]


def _wake(waiters: deque[Waiter]) -> bool:
    """Wake the first waiter still waiting; whether there was one."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False


def _off(waiters: deque[Waiter], waiter: Waiter) -> bool:
    """Take a waiter off a line if it is on it; whether it was."""
    try:
        waiters.remove(waiter)
    except ValueError:
        return False
    return True


def _leave(waiters: deque[Waiter], waiter: Waiter) -> None:
    """A waiting task was cancelled: take it off the line, or pass on the turn it was given."""
    if waiter.done() and not waiter.cancelled():
        _wake(waiters)
    else:
        with suppress(ValueError):  # a waiter woken by close() is off the line already
            waiters.remove(waiter)
