"""Server-sent events, parsed as the WHATWG algorithm says, fed in arbitrary chunks.

Lines end in CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next
are one line end); one space after ``field:`` is dropped; ``data`` lines join with ``\\n``; a
blank line dispatches; comments (``: ping``) and events without data (priming events) are read
and let go. ``last_event_id`` and ``retry_ms`` outlive the events that set them, for resuming.
"""

from __future__ import annotations

import codecs
import re

import attrs

__all__ = ("Event", "SseParser")

_LINE_END = re.compile(r"\r\n|\r|\n")


@attrs.frozen(kw_only=True)
class Event:
    """One dispatched event with data."""

    data: str
    event: str = "message"
    id: str | None = None


class SseParser:
    """Turns the bytes of an event stream into events; keep one per stream."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self.last_event_id: str | None = None
        """The id of the last event (or field) the stream gave, for ``Last-Event-ID``."""
        self.retry_ms: int | None = None
        """The reconnection time the stream asked for, in milliseconds."""

    def feed(self, chunk: bytes) -> list[Event]:
        """Read a chunk; return the events it completes."""
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        self._buffer += text
        events: list[Event] = []
        start = 0
        for match in _LINE_END.finditer(self._buffer):
            if match.group() == "\r" and match.end() == len(self._buffer):
                break  # an LF may follow in the next chunk
            event = self._line(self._buffer[start : match.start()])
            start = match.end()
            if event is not None:
                events.append(event)
        self._buffer = self._buffer[start:]
        return events

    def close(self) -> list[Event]:
        """The stream ended: a pending CR ends its line (an unfinished event is dropped)."""
        if self._buffer.endswith("\r"):
            return self.feed(b"\n")
        return []

    def _line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
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
        self._data, self._event = [], ""
        if not data:
            return None
        return Event(data="\n".join(data), event=event or "message", id=self.last_event_id)
