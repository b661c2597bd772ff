"""Server-sent events, parsed as the WHATWG algorithm says, fed in arbitrary chunks.

Lines end in CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next
are one line end); one space after ``field:`` is dropped; ``data`` lines join with ``\\n``; a
blank line dispatches, and an unfinished line or event at the stream's end is dropped; comments
(``: ping``) and events without data (priming events) are read and let go. ``last_event_id``
and ``retry_ms`` outlive the events that set them, for resuming.

Work is linear in the bytes fed: each chunk is scanned once, and a line that spans chunks is
kept in parts until it ends. A line, or an event's data, longer than ``max_event_bytes`` stops
the stream with :class:`~amends_toolkit.protocols._body.AnswerTooLarge`.
"""

from __future__ import annotations

import codecs
import re

import attrs

from amends_toolkit.protocols._body import AnswerTooLarge
from amends_toolkit.protocols.mcp._jsonrpc import MAX_MESSAGE_BYTES

__all__ = ("Event", "SseParser")

_LINE_END = re.compile(r"\r\n|\r|\n")


@attrs.frozen(kw_only=True)
class Event:
    """One dispatched event with data."""

    data: str
    event: str = "message"
    id: str | None = None


class SseParser:
    """Turns the bytes of an event stream into events; keep one per stream.

    ``max_event_bytes`` bounds one line and one event's data (in characters once decoded,
    which UTF-8 bytes never undercount).
    """

    def __init__(self, *, max_event_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._limit = max_event_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []  # the unfinished line, in the pieces it came in
        self._pending = 0
        self._cr = False  # the last chunk ended in CR: an LF at the start of this one is its end
        self._started = False
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self.last_event_id: str | None = None
        """The id of the last event (or field) the stream gave, for ``Last-Event-ID``."""
        self.retry_ms: int | None = None
        """The reconnection time the stream asked for, in milliseconds."""

    def feed(self, chunk: bytes) -> list[Event]:
        """Read a chunk; return the events it completes.

        Raises:
            AnswerTooLarge: a line or an event is longer than the limit.
        """
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if not text:
            return []
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = False
        events: list[Event] = []
        start = 0
        for match in _LINE_END.finditer(text):
            if match.group() == "\r" and match.end() == len(text):
                self._cr = True  # an LF may follow in the next chunk, ending the same line
            piece = text[start : match.start()]
            if self._parts:
                self._parts.append(piece)
                piece = "".join(self._parts)
                self._parts, self._pending = [], 0
            start = match.end()
            event = self._line(piece)
            if event is not None:
                events.append(event)
        rest = text[start:]
        if rest:
            self._pending += len(rest)
            if self._pending > self._limit:
                raise AnswerTooLarge(self._limit)
            self._parts.append(rest)
        return events

    def _line(self, line: str) -> Event | None:
        if len(line) > self._limit:
            raise AnswerTooLarge(self._limit)
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._size += len(value) + 1
            if self._size > self._limit:
                raise AnswerTooLarge(self._limit)
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        data, event = self._data, self._event
        self._data, self._event, self._size = [], "", 0
        if not data:
            return None
        return Event(data="\n".join(data), event=event or "message", id=self.last_event_id)
