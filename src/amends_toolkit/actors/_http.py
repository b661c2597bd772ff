"""The source of HTTP operations: each tool is a request sent to one base URL over the host's
client (an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``).

This is the one place where what HTTP answered becomes a ``ToolSourceError`` reason:

===============================  ================================================================
What happened                    Reason
===============================  ================================================================
an input value the template      ``InvalidInputError``, saying which property and why
cannot send, or a body longer
than ``max_body_size``
2xx                              the body as JSON (a JSON content type), as text, or null
                                 without one; an image, a sound or a PDF as one MCP content
                                 block of its base64 (``amends_toolkit._content``), which the
                                 adapters give a model as media; ``InvalidResponseError`` when
                                 it says it is JSON and is not, or is not text at all
an answer longer than            ``CallFailedError`` telling the model to ask for less; the body
``max_answer_length``            is read only until it is known to be too long (for media: its
                                 base64)
401, 403                         ``AuthenticationError`` (the body is not read)
408, 429, 5xx                    ``UnavailableError`` with ``retry_after`` from ``Retry-After``
                                 (seconds or an HTTP date); the body is not read
any other 4xx                    ``CallFailedError`` with the API's own words, cut to 500
                                 characters
a body in a content coding not   ``InvalidResponseError``
asked for (not gzip or deflate)
3xx (a redirect the client did   ``InvalidResponseError``
not follow)
no answer within ``timeout``     ``UnavailableError`` (one deadline for sending and reading)
timeouts, network and proxy      ``UnavailableError``
errors of the client
a broken answer (protocol,       ``InvalidResponseError``
decoding, too many redirects)
any other error of the client    ``UnknownError``
cancellation                     propagates; it is never an error
===============================  ================================================================

Whatever the model reads of an answer, a success or a failure, has the client's own header and
query values (its credentials) replaced first; a compressed body is inflated a bounded piece at
a time, so ``max_answer_length`` bounds what is held too.
"""

from __future__ import annotations

from collections import Counter
from http import HTTPStatus
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import urlsplit

import anyio

from amends_toolkit._content import media_block
from amends_toolkit._errors import (
    AuthenticationError,
    CallFailedError,
    InvalidInputError,
    InvalidResponseError,
    NotFoundError,
    ToolSourceError,
    UnavailableError,
    UnknownError,
)
from amends_toolkit._json import MAX_DEPTH
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_counts, check_name, check_seconds, check_url
from amends_toolkit._peer import MAX_MODEL_TEXT, ClientSecrets, Secrets, cut
from amends_toolkit._tracing import error_code, failed, injected, span, traced
from amends_toolkit.protocols._body import (
    ACCEPT_ENCODING,
    AnswerTooLarge,
    UnreadableCoding,
    asks_codings,
    read_bounded,
    read_pieces,
)
from amends_toolkit.protocols.http import (
    MAX_BODY_SIZE,
    BoundedText,
    HttpClient,
    InputRefused,
    Operation,
    UnreadableAnswer,
    WireRequest,
    build_request,
    charset,
    check_client,
    client_url,
    join_url,
    library_of,
    network_failure,
    outcome,
    parse_answer,
    placeholders,
    request_timeout,
    retry_after,
)
from amends_toolkit.protocols.http._response import binary_media_type
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from opentelemetry.trace import Tracer

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.protocols.http import HttpResponse

__all__ = ("AsyncClient", "HttpSource", "client_error", "make")

_log = get_logger(__name__)


AsyncClient: TypeAlias = HttpClient
"""The host's client: an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient`` (see
:class:`~amends_toolkit.protocols.http.HttpClient`)."""


# Errors of httpx and httpx2 (same names, two class trees), by the nearest class in the MRO.
_CLIENT_ERRORS: Mapping[str, type[ToolSourceError]] = {
    "TimeoutException": UnavailableError,
    "NetworkError": UnavailableError,
    "ProxyError": UnavailableError,
    "RemoteProtocolError": InvalidResponseError,
    "DecodingError": InvalidResponseError,
    "TooManyRedirects": InvalidResponseError,
    "HTTPError": UnknownError,
}


def client_error(error: BaseException) -> type[ToolSourceError] | None:
    """The reason an error of the client (httpx or httpx2) is, or ``None`` when it is none."""
    for cls in type(error).__mro__:
        if library_of(cls) is not None:
            reason = _CLIENT_ERRORS.get(cls.__name__)
            if reason is not None:
                return reason
    return None


class HttpSource:
    """A source of HTTP operations; build it with :func:`make`."""

    honours_cancellation = True
    """A cancelled call ends at once (its cleanup bounded): an actor may run it inline."""

    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        operations: Sequence[Operation],
        client: AsyncClient,
        timeout: float,
        max_answer_length: int,
        max_body_size: int,
        max_depth: int = MAX_DEPTH,
        propagate_trace: bool = False,
    ) -> None:
        self._name = name
        self._base_url = base_url
        parts = urlsplit(base_url)
        # What a span names of the API: its host and port, and its path before the template's.
        self._server = (
            parts.hostname or "",
            parts.port or (443 if parts.scheme == "https" else 80),
        )
        self._base_path = parts.path.rstrip("/")
        self._propagate_trace = propagate_trace
        self._operations = {operation.definition.name: operation for operation in operations}
        self._definitions = tuple(operation.definition for operation in operations)
        self._client = client
        # An operation without placeholders always goes to one URL: parsed once, the client's own.
        self._targets = {
            operation.definition.name: client_url(client, join_url(base_url, path))
            for operation in operations
            if not placeholders(path := operation.request.path)
        }
        self._secrets = ClientSecrets(client, base_url)
        self._timeout = timeout
        self._max_answer_length = max_answer_length
        self._max_body_size = max_body_size
        self._max_depth = max_depth

    @property
    def name(self) -> str:
        """The source's name."""
        return self._name

    def __repr__(self) -> str:
        return f"<HttpSource {self._name!r}: {len(self._definitions)} operations>"

    async def discover(self) -> Sequence[ToolDefinition]:
        """The operations' definitions, as given: it contacts nothing."""
        return self._definitions

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Send the request of ``tool`` filled with ``input``, and return what it answered.

        Raises:
            NotFoundError: no operation has that name.
            InvalidInputError: a value cannot be sent (see the request rules in ``at.http``).
            AuthenticationError: the API answered 401 or 403.
            UnavailableError: 408, 429 or 5xx (with ``retry_after`` when the API said), the
                timeout passed, or the API could not be reached.
            CallFailedError: any other 4xx, or an answer longer than ``max_answer_length``.
            InvalidResponseError: an answer that cannot be read, or a redirect.

        Cancellation stops the request and propagates.
        """
        return await self._call(tool, input)

    async def _call(self, tool: str, input: JsonObject) -> JsonValue:
        operation = self._operations.get(tool)
        if operation is None:
            raise NotFoundError(source=self._name, message=f"no operation named {tool!r}")
        try:
            wire = build_request(
                operation.request,
                input,
                base_url=self._base_url,
                max_body_size=self._max_body_size,
                max_depth=self._max_depth,
            )
        except InputRefused as error:
            raise InvalidInputError(source=self._name, message=str(error)) from None
        client = self._client
        headers, query = wire.headers, wire.query
        # The client's own headers and query parameters (its credentials) come last and win: one
        # the client sets is not sent from the input, so the client's value is the one sent.
        if headers:
            own_headers = {key.lower() for key in client.headers}
            headers = [(k, v) for k, v in headers if k.lower() not in own_headers]
        if query:
            own_query = set(client.params)
            query = [(k, v) for k, v in query if k not in own_query]
        # Only the codings read here (given only when the client does not ask for just those).
        if asks_codings(client):
            headers = [*headers, ("Accept-Encoding", ACCEPT_ENCODING)]
        tracer = traced()
        if tracer is None:
            return await self._exchange(tool, wire, headers, query)
        return await self._traced(tracer, operation, tool, wire, headers, query)

    async def _traced(
        self,
        tracer: Tracer,
        operation: Operation,
        tool: str,
        wire: WireRequest,
        headers: list[tuple[str, str]],
        query: list[tuple[str, str]],
    ) -> JsonValue:
        """:meth:`_exchange` in an HTTP client span named by the path's template (never the
        URL, which holds the input's values), its ``traceparent`` sent when the host asked."""
        template = self._base_path + operation.request.path
        host, port = self._server
        attributes: dict[str, str | float] = {
            "http.request.method": wire.method,
            "url.template": template,
            "server.address": host,
            "server.port": port,
        }
        with span(tracer, f"{wire.method} {template}", attributes, client=True) as made:
            if self._propagate_trace:
                carrier: dict[str, str] = {}
                injected(carrier)
                own = {key.lower() for key in self._client.headers}
                if "traceparent" in carrier and "traceparent" not in own:
                    headers = [*headers, ("traceparent", carrier["traceparent"])]
            statuses: list[int] = []
            try:
                return await self._exchange(tool, wire, headers, query, statuses)
            except Exception as error:
                if not statuses:
                    failed(made, error_code(error))
                raise
            finally:
                if statuses:
                    made.set_attribute("http.response.status_code", statuses[0])
                    if statuses[0] >= 400:
                        failed(made, str(statuses[0]))

    async def _exchange(
        self,
        tool: str,
        wire: WireRequest,
        headers: list[tuple[str, str]],
        query: list[tuple[str, str]],
        statuses: list[int] | None = None,
    ) -> JsonValue:
        """Send the request and read its answer within ``timeout``, the client's errors as
        reasons; the answer's status is added to ``statuses`` when given."""
        try:
            with anyio.move_on_after(self._timeout):
                return await self._send(tool, wire, headers, query, statuses)
        except ToolSourceError:
            raise
        except UnreadableCoding as error:
            raise InvalidResponseError(source=self._name, message=str(error)) from None
        except Exception as error:
            reason = client_error(error)
            if reason is None:
                raise
            _log.info("call.failed", source=self._name, tool=tool, error=type(error).__name__)
            raise reason(
                source=self._name, message=network_failure(wire.method, self._base_url, error)
            ) from None
        # Only the deadline ends the scope with neither an answer nor an error.
        raise timed_out(self._name, tool, "source's timeout", self._timeout)

    async def _send(
        self,
        tool: str,
        wire: WireRequest,
        headers: list[tuple[str, str]],
        query: list[tuple[str, str]],
        statuses: list[int] | None,
    ) -> JsonValue:
        async with self._client.stream(
            wire.method,
            self._targets.get(tool, wire.url),
            content=wire.content,
            # None, not empty: the client would build the URL again for an empty query.
            params=tuple(query) if query else None,
            headers=headers or None,
            timeout=request_timeout(self._client, self._timeout),
        ) as response:
            sent = [value for _, value in (*headers, *query)]
            secrets = self._secrets.current(response, sent)
            status = response.status_code
            if statuses is not None:
                statuses.append(status)
            kind = outcome(status)
            if kind == "success":
                return await self._success(tool, response, secrets)
            _log.info("call.refused", source=self._name, tool=tool, status=status)
            phrase = _phrase(status)
            if kind == "authentication":
                raise AuthenticationError(source=self._name, message=f"the API answered {phrase}")
            if kind == "unavailable":
                raise UnavailableError(
                    source=self._name,
                    message=f"the API answered {phrase}",
                    retry_after=retry_after(response.headers.get("retry-after")),
                )
            if kind == "unexpected":
                raise InvalidResponseError(
                    source=self._name, message=f"the API answered {phrase}, which is not followed"
                )
            # Read past the cut by the longest credential, so that none is cut in half.
            content_type = response.headers.get("content-type")
            words = await _read(response, MAX_MODEL_TEXT + secrets.longest, content_type)
            text = cut(secrets.redact(words.text)) if not words.undecodable else ""
            message = f"The API answered {phrase}" + (f": {text}" if text else ".")
            raise CallFailedError(source=self._name, message=message)

    async def _success(self, tool: str, response: HttpResponse, secrets: Secrets) -> JsonValue:
        content_type = response.headers.get("content-type")
        media = binary_media_type(content_type)
        if media is not None:
            # Its base64 is what the model reads: four characters for every three bytes.
            data = await _read_bytes(response, self._max_answer_length // 4 * 3)
            if data is None:
                raise self._too_long()
            return [media_block(data, media, uri=f"answer:{tool}")]
        body = await _read(response, self._max_answer_length, content_type)
        if body.too_long:
            raise self._too_long()
        if body.undecodable:
            raise InvalidResponseError(
                source=self._name,
                message=f"the answer ({content_type or 'no content type'}) is not text",
            )
        try:
            value = parse_answer(content_type, body.text, max_depth=self._max_depth)
            return secrets.redact_value(value)
        except UnreadableAnswer as error:
            raise InvalidResponseError(source=self._name, message=str(error)) from None

    def _too_long(self) -> CallFailedError:
        return CallFailedError(
            source=self._name,
            message=(
                f"The answer is longer than {self._max_answer_length} characters. Ask for "
                "less: use a filter, a smaller page or fewer fields."
            ),
        )


class _Read(BoundedText):
    too_long = False


async def _read_bytes(response: HttpResponse, limit: int) -> bytes | None:
    """The body, or ``None`` as soon as it is longer than ``limit`` bytes."""
    # Inflated a piece at a time, as any answer is: a compressed bomb stops at the limit.
    try:
        return await read_bounded(response, limit)
    except AnswerTooLarge:
        return None


async def _read(response: HttpResponse, limit: int, content_type: str | None) -> _Read:
    body = _Read(limit=limit, encoding=charset(content_type))
    # Each piece read stops the reading once the text is too long or cannot be decoded.
    if not await read_pieces(response, lambda piece: body.feed(piece) and not body.undecodable):
        body.too_long = not body.undecodable
        return body
    body.too_long = not body.close()
    return body


def _phrase(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def make(
    *,
    name: str,
    base_url: str,
    operations: Sequence[Operation],
    client: AsyncClient,
    timeout: float = 30.0,
    max_answer_length: int = 200_000,
    max_body_size: int = MAX_BODY_SIZE,
    max_depth: int = MAX_DEPTH,
    propagate_trace: bool = False,
) -> HttpSource:
    """A source of ``operations`` that sends their requests to ``base_url`` over ``client``.

    ``client`` is the host's ``httpx.AsyncClient`` or ``httpx2.AsyncClient``, which carries the
    credentials; its own headers come last and win over any header an input fills. Building it
    contacts nothing.

    Args:
        name: the source's name, which prefixes its tools in an assembly.
        base_url: an absolute ``http(s)`` URL, which may end in a path (``https://api/v1``); an
            operation's path follows it.
        operations: the tools, under distinct names.
        client: the host's client, shared by every call; the source never closes it.
        timeout: seconds a call may take, sending and reading included; past it a call fails as
            ``UnavailableError``.
        max_answer_length: characters of an answer the model may read; a longer one fails as
            ``CallFailedError``. Reading stops there, a compressed answer's inflating too.
        max_body_size: bytes a request body may have (a file the model gives included); a
            longer one is refused as ``InvalidInputError`` before anything is sent.
        max_depth: how deep a JSON answer (and an input) may nest; a deeper answer is
            ``InvalidResponseError``, a deeper input ``InvalidInputError``.
        propagate_trace: send the W3C ``traceparent`` header of a traced call's span (see
            docs/guides/tracing.md), so that the API's own spans join the host's trace. Off by
            default: an API is a third party, and the header tells it the host's trace id. A
            ``traceparent`` the client sets itself wins.

    Raises:
        ValueError: a bad option (a ``base_url`` the client cannot parse among them), or two
            operations with one name (the message names them).
        TypeError: a client that is not an async httpx-style client (a sync ``httpx.Client``
            among them), the message naming the fix.
    """
    check_name(name, "shop")
    parts = check_url("base_url", base_url, "https://api.example.com/v1")
    if parts.query or parts.fragment:
        raise ValueError("base_url may not hold a query or a fragment")
    check_seconds(timeout=timeout)
    check_client(client)
    client_url(client, base_url, name="base_url")
    check_counts(
        max_answer_length=max_answer_length, max_body_size=max_body_size, max_depth=max_depth
    )
    operations = tuple(operations)
    for operation in operations:
        if not isinstance(operation, Operation):
            raise ValueError(f"operations must be at.http.Operation values, not {operation!r}")
    counts = Counter(operation.definition.name for operation in operations)
    clashes = sorted(name for name, count in counts.items() if count > 1)
    if clashes:
        raise ValueError(f"operations share names {clashes}; give each operation its own name")
    return HttpSource(
        name=name,
        base_url=base_url,
        operations=operations,
        client=client,
        timeout=float(timeout),
        max_answer_length=max_answer_length,
        max_body_size=max_body_size,
        max_depth=max_depth,
        propagate_trace=bool(propagate_trace),
    )
