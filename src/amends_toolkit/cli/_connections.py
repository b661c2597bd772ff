"""The gateway's HTTP connections: bounded in number, each request read in bounded time.

uvicorn (0.55) closes a connection idle between requests (``timeout_keep_alive``) but waits
without end for a request's head and body: a client that sends half a head, or a body a byte at
a time, holds its connection and a file, and enough of them every file the process may open
(slowloris). :class:`TimedH11Protocol` is uvicorn's h11 protocol with a clock on reading: a
request's head must arrive whole within ``header_timeout`` seconds of its first byte (of the
connection, for the first request) and its body within ``body_timeout`` seconds of the head, or
the connection is closed. The number of connections is uvicorn's ``limit_concurrency``: a
request at it is answered 503, a connection past it closed as soon as it is accepted; and
:func:`raise_open_files` lets the process open as many files as its hard limit allows, so that
cap, not the soft limit, is what a flood meets.
"""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING, ClassVar, Final, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from amends_toolkit._log import get_logger
from amends_toolkit.cli._config import BODY_TIMEOUT, HEADER_TIMEOUT

if TYPE_CHECKING:
    import asyncio

__all__ = (
    "FILES_RESERVED",
    "TimedH11Protocol",
    "raise_open_files",
    "timed_protocol",
)

_log = get_logger("amends_toolkit.gateway")

FILES_RESERVED: Final = 256
"""Open files kept for what is not a client's connection: the sources' sockets and pipes, logs."""

Phase = Literal["head", "body"]


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request's head or body is late.

    Build a subclass with its timeouts by :func:`timed_protocol`.
    """

    header_timeout: ClassVar[float] = HEADER_TIMEOUT
    body_timeout: ClassVar[float] = BODY_TIMEOUT

    _phase: Phase | None = None
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.limit_concurrency is not None and len(self.connections) > self.limit_concurrency:
            # Past the cap a connection is closed at once, so that connections never take the
            # files the process may open (a request at the cap is answered 503 by uvicorn).
            transport.close()
            return
        self._enter("head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._enter(None)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        # Called when data arrives and when a response completes: h11's state then says which
        # part of a request, if any, the connection is waiting for.
        super().handle_events()
        if self.transport.is_closing():
            self._enter(None)
        elif self.conn.their_state is h11.SEND_BODY:
            self._enter("body")
        elif self.conn.their_state is h11.IDLE and (
            self.conn.trailing_data[0] or self._phase == "head"
        ):
            # Part of a head has come (or the connection's first head is awaited); between
            # requests, with nothing sent, timeout_keep_alive holds instead.
            self._enter("head")
        else:
            self._enter(None)

    def _enter(self, phase: Phase | None) -> None:
        if phase == self._phase:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._phase = phase
        if phase is not None:
            seconds = self.header_timeout if phase == "head" else self.body_timeout
            self._timer = self.loop.call_later(seconds, self._late, phase)

    def _late(self, phase: Phase) -> None:
        self._timer = None
        if not self.transport.is_closing():
            _log.debug("gateway.request_too_slow", part=phase)
            self.transport.close()


def timed_protocol(*, header_timeout: float, body_timeout: float) -> type[TimedH11Protocol]:
    """:class:`TimedH11Protocol` with these timeouts, for ``uvicorn.Config(http=...)``."""
    return type(
        "TimedH11Protocol",
        (TimedH11Protocol,),
        {"header_timeout": header_timeout, "body_timeout": body_timeout},
    )


def raise_open_files() -> int:
    """Raise the soft limit of open files to the hard limit; return the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # macOS refuses a soft limit past OPEN_MAX (10,240) when the hard one is infinite.
    for target in (hard, 10_240):
        if target == resource.RLIM_INFINITY or target <= soft:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        return target
    return soft
