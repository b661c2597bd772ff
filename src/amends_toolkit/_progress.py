"""Progress of a running call, relayed from its source to whoever asked for it.

Whoever runs a call and wants its progress (a :class:`~amends_toolkit.Session` given
``on_progress``, the MCP front for a client that sent a progress token) runs it inside
:func:`listening`; a source that can report progress (an MCP server's ``notifications/progress``)
asks :func:`listener` whether anyone listens, and only then asks its peer for progress. None
asked, none kept: without a listener a source requests none and drops any it is sent.

The listener is a context variable, so it follows the call into the tasks it starts; an actor
carries it across its mailbox in the ``Call`` message (:mod:`amends_toolkit.runtime._messages`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias

import attrs

from amends_toolkit._log import get_logger

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = ("OnProgress", "Progress", "listener", "listening", "report")


@attrs.frozen(kw_only=True)
class Progress:
    """How far a call has come: ``progress`` of ``total`` (when known), and what it says.

    ``progress`` only grows within one call, as MCP requires of a server; a source passes on
    what its peer said and does not check it.
    """

    progress: float
    total: float | None = None
    message: str | None = None


OnProgress: TypeAlias = Callable[[Progress], Awaitable[None] | None]
"""Told each progress of a call, in order; awaited before the source reads on."""

_log = get_logger(__name__)

_listener: ContextVar[OnProgress | None] = ContextVar("amends_toolkit_progress", default=None)


listener: Callable[[], OnProgress | None] = _listener.get
"""Who listens to the progress of the call running in this context, if anyone: the context
variable's own ``get`` (no Python frame: each call of a Session and of an actor asks)."""


class _Listening:
    """The block of :func:`listening`: a class, not a generator, as every call enters one."""

    __slots__ = ("_on_progress", "_token")

    def __init__(self, on_progress: OnProgress | None) -> None:
        self._on_progress = on_progress

    def __enter__(self) -> None:
        self._token = _listener.set(self._on_progress)

    def __exit__(self, *exc: object) -> None:
        _listener.reset(self._token)


class _Unchanged:
    """The block of :func:`listening` when no one listens and no one did: nothing to set."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_UNCHANGED = _Unchanged()


def listening(on_progress: OnProgress | None) -> AbstractContextManager[None]:
    """Run the block's calls with ``on_progress`` told their progress (``None``: no one)."""
    if on_progress is None and _listener.get() is None:
        # Already no one: setting it again would cost a token and a context for each call.
        return _UNCHANGED
    return _Listening(on_progress)


async def report(on_progress: OnProgress, progress: Progress) -> None:
    """Tell a listener of a progress, awaiting it if it is async.

    A listener that fails is logged and the call goes on: progress is what a call tells, not
    what it answers. Cancellation propagates.
    """
    try:
        told = on_progress(progress)
        if inspect.isawaitable(told):
            await told
    except Exception as error:  # noqa: BLE001 - the listener's defect: read in the host's log
        _log.warning("progress.listener_failed", exc_info=error)
