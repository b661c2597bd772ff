"""Reading an HTTP answer: what its status means, ``Retry-After``, and a body read only as far as
it is needed.

=====================  ==============================================================
Status                 Outcome
=====================  ==============================================================
2xx                    ``"success"``: the body as JSON, as text, or null without one;
                       an image, a sound or a PDF as its bytes (:func:`binary_media_type`)
401, 403               ``"authentication"``
408, 429, 5xx          ``"unavailable"``: the body is not read; ``Retry-After`` is
other 4xx              ``"failed"``: the API's own words, cut to 500 characters
anything else (3xx)    ``"unexpected"``: a redirect the host's client did not follow
=====================  ==============================================================
"""

from __future__ import annotations

import codecs
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from amends_toolkit._json import MAX_DEPTH, JsonRefused, loads

if TYPE_CHECKING:
    from amends_toolkit._json import JsonValue

__all__ = (
    "BoundedText",
    "Outcome",
    "UnreadableAnswer",
    "binary_media_type",
    "charset",
    "is_json",
    "outcome",
    "parse_answer",
    "retry_after",
)

Outcome: TypeAlias = Literal["success", "authentication", "unavailable", "failed", "unexpected"]

_MAX_DELAY_DIGITS = 10


class UnreadableAnswer(ValueError):
    """A successful answer that is neither JSON nor text."""


def outcome(status: int) -> Outcome:
    """What a status means for a call (see the table above): the one rule of which statuses
    are an authentication failure and which say the system is unavailable, for HTTP sources and
    MCP servers alike."""
    if 200 <= status < 300:
        return "success"
    if status in (401, 403):
        return "authentication"
    if status in (408, 429) or 500 <= status < 600:
        return "unavailable"
    if 400 <= status < 500:
        return "failed"
    return "unexpected"


def retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """The seconds ``Retry-After`` asks to wait: delay-seconds or an HTTP date (RFC 9110 10.2.3).

    The one reader of the header, for HTTP sources and MCP servers alike. An HTTP date is GMT
    whatever the machine's time zone, in all three of its forms (the asctime form and a
    ``-0000`` zone name none). A date in the past is 0; a value that is neither, or a delay of
    more digits than a year of seconds has, is ``None``, as if the header were absent.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(int(value)) if len(value) <= _MAX_DELAY_DIGITS else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        # RFC 9110 dates are GMT; email.utils leaves "-0000" and the asctime form naive.
        when = when.replace(tzinfo=UTC)
    now = now if now is not None else datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is JSON (``application/json`` or a ``+json`` type)."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def binary_media_type(content_type: str | None) -> str | None:
    """The media type of an answer read as bytes, not text: an image (not SVG, which is text), a
    sound or a PDF; ``None`` for any other ``Content-Type``."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    top, _, sub = media.partition("/")
    if top in ("image", "audio") and sub and not sub.endswith(("+xml", "+json")):
        return media
    return media if media == "application/pdf" else None


def charset(content_type: str | None) -> str:
    """The charset a ``Content-Type`` names, if Python knows it, else UTF-8."""
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip('"')
            try:
                return codecs.lookup(name).name
            except LookupError:
                break
    return "utf-8"


class BoundedText:
    """Decodes a body chunk by chunk, and says when it has more than ``limit`` characters.

    A caller stops reading as soon as :meth:`feed` returns ``False``, so a body far longer than
    the limit is never read whole.
    """

    def __init__(self, *, limit: int, encoding: str = "utf-8") -> None:
        self._limit = limit
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
        self._parts: list[str] = []
        self._length = 0
        self.undecodable = False

    def feed(self, chunk: bytes) -> bool:
        """Add a chunk; ``False`` once the text is longer than the limit (stop reading)."""
        return self._add(chunk, final=False)

    def close(self) -> bool:
        """End the body; ``False`` when the text is longer than the limit."""
        return self._add(b"", final=True)

    @property
    def text(self) -> str:
        """The text read so far (at most a few characters past the limit)."""
        return "".join(self._parts)

    def _add(self, chunk: bytes, *, final: bool) -> bool:
        if self.undecodable:
            return True
        try:
            part = self._decoder.decode(chunk, final)
        except UnicodeDecodeError:
            self.undecodable = True
            return True
        self._parts.append(part)
        self._length += len(part)
        return self._length <= self._limit


def parse_answer(content_type: str | None, text: str, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    """A successful answer's value: JSON when it says it is, else the text; ``None`` when empty.

    Raises:
        UnreadableAnswer: the answer says it is JSON and is not (``NaN`` is not), or it nests
            more than ``max_depth`` levels.
    """
    if not text:
        return None
    if is_json(content_type):
        try:
            return loads(text, max_depth=max_depth)
        except JsonRefused as error:
            raise UnreadableAnswer(f"the answer says it is JSON and is not: {error}") from None
    return text
