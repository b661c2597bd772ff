"""The messages an actor handles, and the one-shot reply a caller waits on.

``Discover`` and ``Call`` go through the actor's bounded mailbox; ``Cancel`` and ``Stop`` go
through its control channel, so that they are never stuck behind a full mailbox. Deadlines are
absolute, on anyio's clock (``anyio.current_time()``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeAlias

import anyio
import attrs

from amends_toolkit._json import JsonObject
from amends_toolkit._progress import OnProgress

if TYPE_CHECKING:
    from amends_toolkit._errors import ToolSourceError

__all__ = ("Call", "Cancel", "Control", "Discover", "Reply", "Request", "Stop")


class Reply:
    """The answer to one request: a value or a :class:`ToolSourceError`, set once.

    ``abandoned`` is set by a caller that left (was cancelled) before the answer came; an actor
    that finds it set before it starts the work skips it.
    """

    __slots__ = ("_error", "_event", "_value", "abandoned")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._value: object = None
        self._error: ToolSourceError | None = None
        self.abandoned = False

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def resolve(self, value: object) -> None:
        if not self._event.is_set():
            self._value = value
            self._event.set()

    def fail(self, error: ToolSourceError) -> None:
        if not self._event.is_set():
            self._error = error
            self._event.set()

    async def wait(self) -> object:
        """The value, or raise the error; cancellation leaves the reply unanswered."""
        await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._value


@attrs.frozen(kw_only=True)
class Discover:
    """Ask the source for its tools."""

    id: int
    reply: Reply = attrs.field(eq=False)
    deadline: float = math.inf


@attrs.frozen(kw_only=True)
class Call:
    """Run one tool; answered with its JSON.

    ``progress`` is who listens to the call's progress (the caller's
    :func:`amends_toolkit._progress.listener`), carried across the mailbox to the worker.
    """

    id: int
    tool: str
    input: JsonObject = attrs.field(eq=False)
    reply: Reply = attrs.field(eq=False)
    deadline: float = math.inf
    progress: OnProgress | None = attrs.field(default=None, eq=False)


@attrs.frozen(kw_only=True)
class Cancel:
    """The caller of request ``id`` left: stop its work. An unknown id is ignored."""

    id: int


@attrs.frozen(kw_only=True)
class Stop:
    """Stop the actor: answer every queued and running request, leave the source's lifespan."""


Request: TypeAlias = Discover | Call
Control: TypeAlias = Cancel | Stop
