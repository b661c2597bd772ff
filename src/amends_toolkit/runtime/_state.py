"""A source's state as messages: changed only by one task of its actor, one message at a time.

Calls run concurrently in an actor, but what a source holds between them (a protocol session,
what it found out about the server) must not be changed by two of them at once. A source keeps
such state in a :class:`StateLoop` that its lifespan runs: a call that needs the state changed
asks the loop with a message and awaits the answer, and the loop handles messages in order, so
no lock guards the state, and a message that finds the change already made (a session another
call renewed) answers at once: a storm of calls asking for the same change makes it once.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

from amends_toolkit._errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from anyio.abc import TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ("StateLoop",)

M = TypeVar("M")


class _Answer:
    __slots__ = ("error", "event", "value")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.value: object = None
        self.error: Exception | None = None


class StateLoop(Generic[M]):
    """Messages that change a source's state, handled one at a time by :meth:`run`.

    Args:
        handle: Handles one message and gives its answer; what it raises is raised to the task
            that asked (and the loop goes on). It must bound its own work (a timeout on what it
            sends), since every later message waits for it.
        name: The source's name, for the ``UnavailableError`` of a loop that has stopped.
    """

    def __init__(self, handle: Callable[[M], Awaitable[object]], *, name: str) -> None:
        self._handle = handle
        self._name = name
        self._inbox: MemoryObjectSendStream[tuple[M, _Answer]]
        self._outbox: MemoryObjectReceiveStream[tuple[M, _Answer]]
        self._inbox, self._outbox = anyio.create_memory_object_stream[tuple[M, _Answer]](math.inf)

    async def ask(self, message: M) -> object:
        """Send a message and wait for its answer; a cancelled asker stops waiting, and the
        message is still handled (other tasks may wait for the same change).

        Raises:
            UnavailableError: the loop has stopped (the source's lifespan is over).
            Exception: what handling the message raised.
        """
        answer = _Answer()
        try:
            self._inbox.send_nowait((message, answer))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._stopped() from None
        await answer.event.wait()
        if answer.error is not None:
            raise answer.error
        return answer.value

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Handle messages until cancelled; then answer those left ``UnavailableError``."""
        task_status.started()
        answer: _Answer | None = None
        try:
            async for message, answer in self._outbox:
                try:
                    answer.value = await self._handle(message)
                except Exception as error:  # noqa: BLE001 - raised again to the asker
                    answer.error = error
                answer.event.set()
        finally:
            self._inbox.close()
            if answer is not None and not answer.event.is_set():
                answer.error = self._stopped()
                answer.event.set()
            while True:
                try:
                    _, left = self._outbox.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                left.error = self._stopped()
                left.event.set()
            self._outbox.close()

    def _stopped(self) -> UnavailableError:
        return UnavailableError(source=self._name, message="the source is stopped")
