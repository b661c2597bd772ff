"""Streamable HTTP: one JSON-RPC message per POST, its answer as JSON or as an event stream.

This is the wire under the MCP HTTP source. It knows nothing of tools or of eras: it sends one
message with the headers it is given and finds the answer to it, reading past notifications,
comments and (in a session) the server's own requests, which it hands to a callback. A session's
broken event stream is resumed with GET and ``Last-Event-ID`` (2025-11-25 § Resumability),
waiting the ``retry`` the stream asked for (bounded).

It works over the host's client, an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient`` (same API),
described here as the :class:`HttpClient` protocol. It never builds a client.

What a server sends is bounded before it is held: a JSON body, and each line and event of a
stream, up to ``max_answer_bytes`` inflated bytes (:class:`AnswerTooLarge` past it, the reading
stopped there); every message nests at most ``max_depth`` levels. The client's own header and
query values (its credentials) are replaced in every string of the answer it gives.

A request is sent again, once, only when the server provably did not read it. That is known
only through an ``httpx`` (or ``httpx2``) client's own connection pool, which tells each step of
a request to its ``trace`` extension; the request is sent again when all of these hold:

- it went out on a connection kept alive from an earlier request (no connection was opened
  for it);
- no byte of an answer had come back (the answer's head was not read);
- the connection was reset (``ReadError``): a server's kernel resets a connection its
  application closed with bytes unread (RFC 2525 §2.17), so the application closed it before it
  read the whole request, and a JSON-RPC message is read whole before it is run. This is a
  server closing an idle connection (its keep-alive timeout, a restart) as the request reached
  it.

Never sent again: a request on a new connection, a timeout, an answer that broke off, a
connection the server closed without a reset (``RemoteProtocolError``: the server may have read
the request, then closed), or any request through another client or transport (no trace). httpx
itself retries only connecting (its transport's ``retries``), where nothing was sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlsplit

import anyio
import attrs

from amends_toolkit._log import get_logger
from amends_toolkit._peer import ClientSecrets, Secrets
from amends_toolkit.protocols._body import (
    ACCEPT_ENCODING,
    AnswerTooLarge,
    UnreadableCoding,
    asks_codings,
    decoded_chunks,
    read_bounded,
)
from amends_toolkit.protocols.http import (
    HttpClient,
    HttpResponse,
    client_url,
    libraries,
    network_failure,
    outcome,
    request_timeout,
)
from amends_toolkit.protocols.mcp._jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    ProtocolError,
    Request,
    RequestId,
    Response,
    decode,
    encode,
)
from amends_toolkit.protocols.mcp._sse import SseParser

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from amends_toolkit._json import JsonObject

__all__ = (
    "ACCEPT",
    "MAX_RESUMES",
    "MAX_RETRY_DELAY",
    "Answer",
    "AnswerTooLarge",
    "HttpClient",
    "HttpResponse",
    "HttpWire",
    "ListenRefused",
    "ServerRequestHandler",
    "StreamEnded",
    "Unreachable",
    "UnreadableCoding",
    "transport_errors",
)

_log = get_logger(__name__)

ACCEPT: Final = "application/json, text/event-stream"
MAX_RESUMES: Final = 5
"""How many times one request's broken event stream is resumed before it counts as lost."""
MAX_RETRY_DELAY: Final = 10.0
"""The longest wait (seconds) before resuming, whatever ``retry`` the server asked for."""
MAX_LISTEN_EVENT: Final = 65_536
"""The most bytes one event of a listening stream may take (a notification is small)."""
DEFAULT_RETRY_DELAY: Final = 1.0
"""The wait before resuming when the stream gave no ``retry``."""
_POST_HEADERS: Final = {"Accept": ACCEPT, "Content-Type": "application/json"}
"""A POST's own headers, with ``Accept-Encoding`` when the client's own does not ask for just the
codings read here (see :func:`~amends_toolkit.protocols._body.asks_codings`)."""


ServerRequestHandler = Callable[[Request | Notification], Awaitable[None]]
"""Answers a request the server makes on a session's stream (``ping``), and reads the
notifications that come before the answer (a call's progress)."""


class Unreachable(Exception):
    """The request did not reach the server, or its answer broke off (a network failure)."""


class ListenRefused(Exception):
    """The server answered a request for a stream of notifications with something else."""


class StreamEnded(Exception):
    """The server's event stream ended without the answer, and could not be resumed."""


def transport_errors() -> tuple[type[BaseException], ...]:
    """The errors a client raises when the network fails, for httpx and (if loaded) httpx2."""
    return tuple(error for lib in libraries() for error in (lib.HTTPError, lib.StreamError))


def _resets() -> tuple[type[BaseException], ...]:
    """What an httpx (or httpx2) client raises for a connection that was reset."""
    return tuple(lib.ReadError for lib in libraries())


def _traced(client: HttpClient) -> bool:
    """Whether the client is an httpx (or httpx2) ``AsyncClient``, whose pool tells a request's
    steps to its ``trace`` extension (another transport ignores it)."""
    return any(isinstance(client, lib.AsyncClient) for lib in libraries())


class _Steps:
    """What the pool told of one request's steps (httpcore's ``trace`` extension)."""

    __slots__ = ("answered", "opened", "sent")

    def __init__(self) -> None:
        self.opened = self.sent = self.answered = False

    async def __call__(self, name: str, info: object) -> None:
        if name.startswith("connection.connect_"):
            self.opened = True
        elif name.endswith(".send_request_headers.started"):
            self.sent = True
        elif name.endswith(".receive_response_headers.complete"):
            self.answered = True

    @property
    def unread(self) -> bool:
        """Sent on a connection kept alive, and nothing of an answer came back: with a reset,
        a request the server did not read (see the module's docstring)."""
        return self.sent and not self.opened and not self.answered


class _Resending:
    """One request's response, sent once more when the server reset a kept-alive connection
    before reading it (see the module's docstring); the response closed on leaving."""

    __slots__ = ("_content", "_headers", "_method", "_opened", "_timeout", "_wire")

    def __init__(
        self,
        wire: HttpWire,
        method: str,
        headers: Mapping[str, str],
        content: bytes | None,
        timeout: float | None,
    ) -> None:
        self._wire, self._method, self._headers = wire, method, headers
        self._content, self._timeout = content, timeout

    async def __aenter__(self) -> HttpResponse:
        for attempt in range(2):
            steps = _Steps()
            opened = self._wire.open(
                self._method, self._headers, self._content, timeout=self._timeout, steps=steps
            )
            try:
                response = await opened.__aenter__()
            except self._wire.resets:
                if attempt or not steps.unread:
                    raise
                _log.info("mcp.request_resent", reason="a kept-alive connection was reset unread")
                continue
            self._opened = opened
            return response
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def __aexit__(self, *exc: object) -> bool | None:
        return await self._opened.__aexit__(*exc)  # type: ignore[arg-type]


@attrs.frozen(kw_only=True)
class Answer:
    """What a POST came back with.

    ``message`` is the answer to our request, or ``None`` when the body held none (a
    notification's 202, or an error status with a body that is no JSON-RPC).
    """

    status: int
    message: Response | ErrorResponse | None
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """The response's headers, read only for what is asked of them."""

    @property
    def session_id(self) -> str | None:
        """The session the server began (``Mcp-Session-Id``), if it names one."""
        return self.headers.get("mcp-session-id")

    @property
    def retry_after(self) -> str | None:
        """The server's ``Retry-After``, as it wrote it."""
        return self.headers.get("retry-after")


@attrs.frozen(kw_only=True)
class HttpWire:
    """Sends messages to one MCP endpoint over the host's client."""

    client: HttpClient
    url: str
    timeout: float
    max_answer_bytes: int
    max_depth: int
    secrets: ClientSecrets = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda wire: ClientSecrets(wire.client, wire.url), takes_self=True),
    )
    """The client's credentials, redacted in every answer."""
    target: str = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda wire: client_url(wire.client, wire.url), takes_self=True),
    )
    """``url`` as the client's own URL, parsed once (see
    :func:`~amends_toolkit.protocols.http.client_url`)."""
    query: tuple[tuple[str, str], ...] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda wire: _query(wire.client, wire.url), takes_self=True),
    )
    """The query the host wrote into ``url`` (a key, a tenant), if any (see :func:`_query`)."""
    traced: bool = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda wire: _traced(wire.client), takes_self=True),
    )
    """Whether the client tells a request's steps (see :class:`_Steps`)."""
    resets: tuple[type[BaseException], ...] = attrs.field(
        init=False, eq=False, repr=False, factory=_resets
    )

    def _stream(
        self,
        method: str,
        headers: Mapping[str, str],
        content: bytes | None = None,
        *,
        timeout: float | None,
    ) -> AbstractAsyncContextManager[HttpResponse]:
        """One request to the endpoint, sent once more when the server provably did not read
        it (see the module's docstring)."""
        if not self.traced:
            return self.open(method, headers, content, timeout=timeout)
        return _Resending(self, method, headers, content, timeout)

    def open(
        self,
        method: str,
        headers: Mapping[str, str],
        content: bytes | None,
        *,
        timeout: float | None,
        steps: _Steps | None = None,
    ) -> AbstractAsyncContextManager[HttpResponse]:
        """Send one request once. httpx (and httpx2) replace a URL's query with the client's
        own ``params`` when it has some: ``url``'s query is then given again, so that both are
        sent (the URL's value wins where both name one)."""
        return self.client.stream(
            method,
            self.target,
            content=content,
            headers=headers,
            timeout=request_timeout(self.client, timeout),
            params=self.query if self.query and getattr(self.client, "params", None) else None,
            extensions=None if steps is None else {"trace": steps},
        )

    async def post(
        self,
        message: JsonObject,
        *,
        headers: Mapping[str, str],
        on_request: ServerRequestHandler | None = None,
        resume_headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """POST one message; for a request, read until its answer.

        ``resume_headers`` (a session's) allow resuming a broken event stream with GET.

        Raises:
            Unreachable: no connection, a network failure, or a client timeout.
            StreamEnded: an event stream ended without the answer.
            ProtocolError: a 2xx answer that is not MCP (garbage, no answer to a request).
            AnswerTooLarge: a body, a line or an event longer than ``max_answer_bytes``.
            UnreadableCoding: a body in a content coding that was not asked for.
        """
        id_ = message.get("id")
        # Only a request is answered; our answers to a server's requests are not.
        wanted: RequestId | None = (
            id_ if "method" in message and isinstance(id_, int | str) else None
        )
        sent = {**_POST_HEADERS, **headers}
        if asks_codings(self.client):
            sent["Accept-Encoding"] = ACCEPT_ENCODING
        try:
            async with self._stream(
                "POST", sent, encode(message), timeout=self.timeout
            ) as response:
                status, received = response.status_code, response.headers
                secrets = self.secrets.current(response, sent.values())
                kind = _media_type(received.get("content-type"))
                if wanted is None or outcome(status) in ("authentication", "unavailable"):
                    return Answer(status=status, message=None, headers=received)
                ok = 200 <= status <= 299
                if kind == "text/event-stream" and ok:
                    parser = SseParser(max_event_bytes=self.max_answer_bytes)
                    found = await self._read_events(response, parser, wanted, on_request)
                else:
                    found = None
                    parser = None
                    body = await read_bounded(response, self.max_answer_bytes)
                    if kind == "application/json" or (not ok and body):
                        found = self._answer_in_body(body, wanted, strict=ok)
                    elif ok:
                        raise ProtocolError(
                            f"a request was answered with HTTP {status} and "
                            f"{kind or 'no content type'}"
                        )
        except transport_errors() as error:
            raise Unreachable(network_failure("POST", self.url, error)) from None
        if found is None and parser is not None:
            found = await self._resume(parser, wanted, on_request, resume_headers)
        if found is None and ok:
            raise ProtocolError("the answer holds no response to the request")
        return Answer(status=status, message=_redacted(found, secrets), headers=received)

    async def listen(
        self,
        message: JsonObject | None,
        *,
        headers: Mapping[str, str],
        on_notification: Callable[[str], None],
    ) -> None:
        """Hold a stream of the server's notifications open, telling each one's method.

        ``message`` is a request whose answer is the stream (2026-07-28
        ``subscriptions/listen``), sent with POST; ``None`` opens a session's standalone stream
        with GET. Returns when the server ends the stream (or answers the request).

        Raises:
            ListenRefused: the server offers no such stream (any status but 200 with an
                event stream).
            Unreachable: no connection, or the stream broke off.
            ProtocolError: an event larger than ``MAX_LISTEN_EVENT`` bytes.
        """
        sent = {"Accept": ACCEPT if message is not None else "text/event-stream", **headers}
        if message is not None:
            sent["Content-Type"] = "application/json"
        try:
            async with self._stream(
                "POST" if message is not None else "GET",
                sent,
                None if message is None else encode(message),
                # A listening stream is quiet for as long as nothing changes.
                timeout=None,
            ) as response:
                kind = _media_type(response.headers.get("content-type"))
                if response.status_code != 200 or kind != "text/event-stream":
                    raise ListenRefused(
                        f"HTTP {response.status_code} with {kind or 'no content type'}"
                    )
                parser = SseParser()
                pending = 0
                async for chunk in response.aiter_bytes():
                    pending += len(chunk)
                    events = parser.feed(chunk)
                    if events:
                        pending = 0
                    elif pending > MAX_LISTEN_EVENT:
                        raise ProtocolError("an event of the listening stream is too large")
                    for event in events:
                        if event.event != "message" or not event.data.strip():
                            continue
                        for received in decode(event.data):
                            if isinstance(received, Notification):
                                on_notification(received.method)
                            elif isinstance(received, Response | ErrorResponse):
                                return  # the subscription's end
        except transport_errors() as error:
            raise Unreachable(f"listening failed: {type(error).__name__}") from None

    async def delete(self, headers: Mapping[str, str]) -> int:
        """End a session (DELETE); the status, which the caller only logs.

        Raises:
            Unreachable: the request failed on the network.
        """
        try:
            async with self._stream("DELETE", headers, timeout=self.timeout) as response:
                return response.status_code
        except transport_errors() as error:
            raise Unreachable(network_failure("DELETE", self.url, error)) from None

    async def _read_events(
        self,
        response: HttpResponse,
        parser: SseParser,
        wanted: RequestId,
        on_request: ServerRequestHandler | None,
    ) -> Response | ErrorResponse | None:
        """Read an event stream until our answer; ``None`` when it ended (or broke) first."""
        try:
            chunks = decoded_chunks(response)
            try:
                async for chunk in chunks:
                    for event in parser.feed(chunk):
                        if event.event != "message" or not event.data.strip():
                            continue
                        found = await self._take(event.data, wanted, on_request)
                        if found is not None:
                            return found
            finally:
                await chunks.aclose()
        except transport_errors() as error:
            # The stream broke off; a session resumes it, anything else reports it lost.
            _log.debug("mcp.stream_broken", error=type(error).__name__)
        return None

    async def _take(
        self,
        data: str,
        wanted: RequestId,
        on_request: ServerRequestHandler | None,
    ) -> Response | ErrorResponse | None:
        for message in decode(data, max_depth=self.max_depth):
            if isinstance(message, Response | ErrorResponse):
                if message.id == wanted or (
                    message.id is None and isinstance(message, ErrorResponse)
                ):
                    return message
                continue
            await _handle(message, on_request)
        return None

    async def _resume(
        self,
        parser: SseParser,
        wanted: RequestId,
        on_request: ServerRequestHandler | None,
        headers: Mapping[str, str] | None,
    ) -> Response | ErrorResponse:
        """Resume a broken stream with GET and ``Last-Event-ID``, a bounded number of times.

        Raises:
            StreamEnded: nothing to resume from, or the server would not resume.
            Unreachable: the GET failed on the network.
        """
        for _ in range(MAX_RESUMES):
            if headers is None or parser.last_event_id is None:
                break
            delay = DEFAULT_RETRY_DELAY if parser.retry_ms is None else parser.retry_ms / 1000
            await anyio.sleep(min(delay, MAX_RETRY_DELAY))
            sent = {
                "Accept": "text/event-stream",
                **headers,
                "Last-Event-ID": parser.last_event_id,
            }
            if asks_codings(self.client):
                sent["Accept-Encoding"] = ACCEPT_ENCODING
            _log.debug("mcp.stream_resumed")
            try:
                async with self._stream("GET", sent, timeout=self.timeout) as response:
                    kind = _media_type(response.headers.get("content-type"))
                    if response.status_code != 200 or kind != "text/event-stream":
                        raise StreamEnded(
                            f"resuming the stream was answered with HTTP {response.status_code}"
                        )
                    resumed = SseParser(max_event_bytes=self.max_answer_bytes)
                    resumed.last_event_id, resumed.retry_ms = parser.last_event_id, parser.retry_ms
                    parser = resumed
                    found = await self._read_events(response, parser, wanted, on_request)
            except transport_errors() as error:
                raise Unreachable(network_failure("GET", self.url, error)) from None
            if found is not None:
                return found
        raise StreamEnded("the event stream ended without an answer")

    def _answer_in_body(
        self, body: bytes, wanted: RequestId, *, strict: bool
    ) -> Response | ErrorResponse | None:
        """The answer to ``wanted`` in a JSON body; garbage is an error only for a 2xx
        (``strict``)."""
        try:
            messages = decode(body, max_depth=self.max_depth)
        except ProtocolError:
            if strict:
                raise
            return None
        for message in messages:
            if isinstance(message, Response | ErrorResponse) and (
                message.id == wanted or message.id is None
            ):
                return message
        return None


def _redacted(
    message: Response | ErrorResponse | None, secrets: Secrets
) -> Response | ErrorResponse | None:
    """The answer with the client's secrets replaced in every string a model may read of it."""
    if message is None or not secrets:
        return message
    if isinstance(message, Response):
        result = secrets.redact_value(message.result)
        assert isinstance(result, dict)  # a dict's redaction is a dict
        return attrs.evolve(message, result=result)
    return attrs.evolve(
        message, message=secrets.redact(message.message), data=secrets.redact_value(message.data)
    )


async def _handle(message: Message, on_request: ServerRequestHandler | None) -> None:
    if isinstance(message, Request):
        if on_request is None:
            _log.debug("mcp.server_request_ignored", method=message.method)
        else:
            await on_request(message)
    elif isinstance(message, Notification):
        _log.debug("mcp.notification_received", method=message.method)
        if on_request is not None:
            await on_request(message)


def _query(client: HttpClient, url: str) -> tuple[tuple[str, str], ...]:
    """The query of ``url``, decoded, as :meth:`HttpWire._stream` gives it again beside the
    client's params (the client encodes it anew).

    Raises:
        ValueError: the client has params of its own and the query's escapes are no UTF-8
            (``%FF``), which would be sent as another value (U+FFFD's bytes).
    """
    query = urlsplit(url).query
    try:
        return tuple(parse_qsl(query, keep_blank_values=True, errors="strict"))
    except UnicodeDecodeError:
        if getattr(client, "params", None):
            raise ValueError(
                "url's query is not UTF-8 once decoded: the client's params would replace it"
            ) from None
        return tuple(parse_qsl(query, keep_blank_values=True))


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()
