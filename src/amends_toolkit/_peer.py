"""What a model reads of a peer's words: the host's credentials replaced, then cut to one limit.

A peer (a server, an API) may repeat what it was sent, the credentials of the host's client
among them, in an error, a body or a result. Every text a model reads from a peer is redacted
with the client's :class:`Secrets` before it is cut (so no cut leaves half a credential), and
every text from outside that a failure holds (a server's words, an API's body, the echo of an
input in a validation message) is cut to :data:`MAX_MODEL_TEXT` characters.

The other way round, what a person reads of a model's words (a tool's input in an approval's
question, on a terminal or in a client's form) is :func:`shown`: escaped, then cut.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

if TYPE_CHECKING:
    from amends_toolkit._json import JsonValue

__all__ = (
    "MAX_MODEL_TEXT",
    "MAX_SHOWN",
    "NO_SECRETS",
    "REDACTED",
    "ClientSecrets",
    "Secrets",
    "cut",
    "cut_middle",
    "shown",
)

MAX_MODEL_TEXT: Final = 500
"""The most characters of text from outside that a model reads in one failure."""

REDACTED: Final = "[redacted]"
"""What a credential is replaced with."""

_MIN_SECRET: Final = 6
# Shorter values are no credential, and replacing them would garble the text around them.
_NOT_SECRET: Final = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "connection",
        "content-type",
        "content-length",
        "host",
        "user-agent",
    }
)
"""Headers an HTTP client sets by itself, which carry nothing of the host's."""


MAX_SHOWN: Final = 4_000
"""The most characters of a model's text (an approval question's tool and input) a person is
shown; the rest is cut, and the text says how many characters were cut."""

# Controls (C0, DEL, C1), format characters (bidi embeddings, overrides and isolates, zero-width
# characters, the BOM, tags), line and paragraph separators, surrogates, private use, unassigned.
_HIDDEN: Final = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"))


def shown(text: str, *, limit: int = MAX_SHOWN) -> str:
    """``text`` as a person may be shown it (on a terminal, in a client's form): every character
    that is not plainly visible text written as its escape (``\\x1b``, ``\\u202e``,
    ``\\U000e0041``), so none can move a cursor, clear a screen, hide text or turn it around; at
    most ``limit`` characters of it, then how many more there were."""
    kept = "".join(_escape(c) if unicodedata.category(c) in _HIDDEN else c for c in text[:limit])
    if len(text) > limit:
        kept += f"... ({len(text) - limit:,} more characters not shown)"
    return kept


def _escape(character: str) -> str:
    point = ord(character)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def cut(text: str, limit: int = MAX_MODEL_TEXT) -> str:
    """The text without spaces at either end, cut to ``limit`` characters (ending in ``…``)."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cut_middle(text: str, limit: int) -> str:
    """The text cut to ``limit`` characters by leaving out its middle (``…``), so that what a
    message says after an echo of a long value is kept."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


_QUERY_SAFE: Final = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>')
"""What a URL's query holds as it is (the WHATWG URL standard's query set, which httpx follows):
a value written into a URL goes with every other character percent-encoded."""


class Secrets:
    """The values a host's client sends that are its own (its credentials), to redact.

    Built from the client's headers (all but the few a client sets by itself, such as
    ``Accept`` or ``User-Agent``) and its query parameters, each value as it is, its last word
    (the token of ``Bearer <token>``), the forms JSON text writes them in and those a URL's query
    writes them in (percent-encoded, with ``+`` or ``%20`` for a space, or only where a query
    cannot hold a character, as a client sends a value written into its URL); values shorter
    than six characters are left alone.
    """

    __slots__ = ("_texts", "longest")

    def __init__(self, values: Iterable[str]) -> None:
        found: set[str] = set()
        for value in values:
            for part in (value.strip(), value.strip().rpartition(" ")[2]):
                if len(part) >= _MIN_SECRET:
                    escaped = json.dumps(part, ensure_ascii=True)[1:-1]
                    found.update({part, escaped, escaped.replace("/", "\\/")})
                    # as a URL carries it (a server may echo the target it was sent): all
                    # percent-encoded, or written into the URL with what a query cannot hold
                    # percent-encoded and the rest as it is
                    found.update(
                        {
                            quote(part, safe=""),
                            quote_plus(part, safe=""),
                            quote(part, safe=_QUERY_SAFE),
                        }
                    )
        # Longest first, so that a value is replaced whole before a part of it is.
        self._texts = tuple(sorted(found, key=len, reverse=True))
        self.longest = max((len(text) for text in self._texts), default=0)
        """The length of the longest secret: read this much past a cut to redact before it."""

    @classmethod
    def of_client(cls, client: object, also: Iterable[str] = ()) -> Secrets:
        """The secrets of an httpx (or httpx2) client: its own headers' and query's values (and
        ``also``)."""
        headers = getattr(client, "headers", None)
        params = getattr(client, "params", None)
        values: list[str] = list(also)
        if isinstance(headers, Mapping):
            values += [
                str(value) for key, value in headers.items() if str(key).lower() not in _NOT_SECRET
            ]
        if params is not None:
            items = params.multi_items() if hasattr(params, "multi_items") else ()
            values += [str(value) for _, value in items]
        return cls(values) if values else NO_SECRETS

    def __bool__(self) -> bool:
        return bool(self._texts)

    def redact(self, text: str) -> str:
        """The text with every secret replaced by ``[redacted]``."""
        for secret in self._texts:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def redact_value(self, value: JsonValue) -> JsonValue:
        """A JSON value with every secret replaced in its strings (the same value when there is
        no secret). Keys are left as they are: they are the shape a reader relies on."""
        if not self._texts:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.redact_value(item) for key, item in value.items()}
        return value


NO_SECRETS: Final = Secrets(())
"""A client with nothing of its own to hide (or a source with no client, such as stdio)."""


_NOT_SENT_SECRET: Final = _NOT_SECRET | {"cookie"}
"""Headers of a request that carry no secret of the host's: those a client sets by itself, and
``Cookie`` (see :class:`ClientSecrets`)."""

_PATH_TOKEN: Final = re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[^/]{16,}")
"""A segment of an address's path that is a token, a key or an id, no word: 16 characters or
more, letters and digits among them (``/api/mcp/s/<key>/mcp``)."""


class ClientSecrets:
    """The :class:`Secrets` of one client as they are now, read again only when its headers,
    its query parameters or the credentials of the request it sent changed since the last time
    (a host may give its client a new token at any time); one per source, asked on each
    response.

    An httpx (or httpx2) client's headers are compared by their raw bytes and its query
    parameters (immutable) by identity; any other client is read each time. The request a
    response answers adds every header and query value that its source did not set itself
    (``sent``) nor a client sets by itself: what the client's ``auth`` (an OAuth provider) or an
    event hook put on it (``Authorization``, ``X-Api-Key``, ``?sig=``), on it or on the requests
    before it in a redirect's history (whose ``Authorization`` another origin is not sent, but
    may be given another way); not a redirect's query, which is the server's. Not its
    ``Cookie``: a client's cookie jar holds what servers set, and a server may set any number
    of cookies, each of which would then be searched for in every answer. The ``url`` the host gave the source adds its query's values (decoded and as
    written), its password and the segments of its path that are tokens (see
    :data:`_PATH_TOKEN`).
    """

    __slots__ = (
        "_also",
        "_client",
        "_params",
        "_raw",
        "_secrets",
        "_sent",
    )

    def __init__(self, client: object, url: str = "") -> None:
        self._client = client
        parts = urlsplit(url)
        # what the host wrote into the address it gave: a key in its query, a password, a token
        self._also = (
            tuple(value for _, value in parse_qsl(parts.query))
            # and as the host wrote them, which a server may echo as it got them
            + tuple(pair.partition("=")[2] for pair in parts.query.split("&"))
            + ((parts.password,) if parts.password else ())
            + tuple(_PATH_TOKEN.findall(parts.path))
        )
        self._raw: object = None
        self._params: object = None
        self._sent: tuple[str, ...] = ()
        self._secrets = NO_SECRETS

    def current(self, response: object = None, sent: Iterable[str] = ()) -> Secrets:
        """The client's secrets now, with those of the request ``response`` answers beyond the
        header and query values its source ``sent``."""
        raw = getattr(getattr(self._client, "headers", None), "raw", None)
        params = getattr(self._client, "params", None)
        request = getattr(response, "request", None)
        # A redirect's query is the server's: the first request's is what auth or a hook set.
        history = getattr(response, "history", None)
        first = getattr(history[0], "request", None) if history else request
        added = self._added(request, first, sent, history)
        if not isinstance(raw, list):
            return Secrets.of_client(self._client, self._also + added)
        if raw != self._raw or params is not self._params or added != self._sent:
            self._raw, self._params, self._sent = raw, params, added
            self._secrets = Secrets.of_client(self._client, self._also + added)
        return self._secrets

    def _added(
        self, request: object, first: object, sent: Iterable[str], history: object = None
    ) -> tuple[str, ...]:
        """The values of a request's headers and of those of the requests before it (its
        redirects' ``history``), and of the query of the ``first`` request, that neither its
        source (``sent``) nor the client set by itself: what the client's ``auth`` or an event
        hook put on it."""
        headers = getattr(request, "headers", None)
        if headers is None or not hasattr(headers, "multi_items"):
            return ()
        every = [headers]
        # A redirect to another origin drops what auth put on the first request (auth runs
        # once), and that server may be given it another way: those before are read too.
        for earlier in history if isinstance(history, list) else ():
            before = getattr(getattr(earlier, "request", None), "headers", None)
            if hasattr(before, "multi_items"):
                every.append(before)
        ours = frozenset(sent)
        added = [
            value
            for each in every
            for name, value in each.multi_items()
            if name.lower() not in _NOT_SENT_SECRET and value not in ours
        ]
        url = getattr(first, "url", None)
        query = getattr(url, "params", None) if getattr(url, "query", None) else None
        if query is not None:
            added += [value for _, value in query.multi_items() if value not in ours]
        return tuple(added)
