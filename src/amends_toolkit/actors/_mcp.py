"""The MCP source over Streamable HTTP, in both eras of the protocol.

It speaks the stateless protocol of 2026-07-28 to a server that does, which it finds out with
``server/discover`` when it first needs the server; any other server is spoken to in a session
begun with ``initialize`` (2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05). It lists tools with
``tools/list`` and runs them with ``tools/call`` and does nothing else of MCP.

Its state (the era found, the session, the header marks it last listed) is built fresh each time
:meth:`McpHttpSource.lifespan` is entered (each incarnation of its actor) and changes only by
messages one task handles in order (a ``StateLoop``): finding the era, beginning the session,
renewing it after the server ended it, taking a listing's marks. So no lock guards it, and
concurrent calls that all need the era, or all meet the session's end, ask the server once. When
the lifespan ends, after that task, the session is ended with DELETE (bounded and shielded).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar

import anyio
import attrs

from amends_toolkit._errors import (
    InvalidResponseError,
    NotFoundError,
    UnavailableError,
    UnsupportedError,
)
from amends_toolkit._json import MAX_DEPTH
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_name, check_seconds, check_url
from amends_toolkit._progress import listener
from amends_toolkit._tracing import traced
from amends_toolkit.actors._limits import check_mcp_options
from amends_toolkit.actors._mcp_core import (
    asked_input,
    bounded,
    not_running,
    session_version,
    tool_failed,
)
from amends_toolkit.actors._mcp_errors import check_input, error_for_rpc, error_for_status
from amends_toolkit.actors._mcp_listen import (
    LISTEN_RETRY_MAX,
    LISTEN_RETRY_MIN,
    listen_request,
    relay_list_changed,
)
from amends_toolkit.actors._mcp_listing import list_tools
from amends_toolkit.actors._mcp_tracing import traced_request
from amends_toolkit.protocols.http import check_client, outcome, retry_after
from amends_toolkit.protocols.mcp._headers import HeaderMark, encode_value, param_headers
from amends_toolkit.protocols.mcp._http import Answer, HttpClient, HttpWire, Unreachable
from amends_toolkit.protocols.mcp._jsonrpc import (
    HEADER_MISMATCH,
    MAX_MESSAGE_BYTES,
    METHOD_NOT_FOUND,
    MODERN_VERSION,
    SESSION_VERSIONS,
    UNSUPPORTED_VERSION,
    ErrorResponse,
    Notification,
    ProtocolError,
    Request,
    Response,
    error_response,
    initialize_params,
    modern_meta,
    notification,
    request,
    result_response,
)
from amends_toolkit.protocols.mcp._results import (
    MAX_RESENDS,
    Complete,
    ToolFailed,
    call_params,
    progress_relay,
    read_call_result,
    resend_delay,
)
from amends_toolkit.runtime import StateLoop
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("McpHttpSource", "http")

_log = get_logger(__name__)

_T = TypeVar("_T")
Era = Literal["modern", "session"]
_Relay: TypeAlias = "Callable[[Notification], Awaitable[None]]"

_VISIBLE_ASCII: Final = frozenset(range(0x21, 0x7F))
_MODERN_META: Final = modern_meta()
"""The ``_meta`` of every 2026-07-28 request, built once: messages are only encoded, never
changed, so each request's holds this one."""


@attrs.frozen(kw_only=True)
class _Session:
    id: str | None
    version: str
    headers: Mapping[str, str] = attrs.field(init=False, eq=False)
    """What each of its requests sends: its version and id (built once, never changed)."""

    @headers.default
    def _headers(self) -> Mapping[str, str]:
        headers = {"MCP-Protocol-Version": self.version}
        if self.id is not None:
            headers["Mcp-Session-Id"] = self.id
        return MappingProxyType(headers)


# The messages that change an incarnation's state, handled one at a time by its StateLoop.


@attrs.frozen
class _FindEra:
    """Find the server's era, unless it is known."""


@attrs.frozen
class _Begin:
    """Begin a session, unless one is begun."""


@attrs.frozen
class _Renew:
    """The server ended ``ended``: begin another, unless another call did already."""

    ended: _Session = attrs.field(eq=False)


@attrs.frozen
class _Listed:
    """A listing's header marks, and the tools it left out with why."""

    marks: dict[str, tuple[HeaderMark, ...]] = attrs.field(eq=False)
    rejected: dict[str, str] = attrs.field(eq=False)


_Message: TypeAlias = _FindEra | _Begin | _Renew | _Listed


@attrs.define(kw_only=True, eq=False)
class _Live:
    """What one incarnation learned; only its loop's handler changes it."""

    loop: StateLoop[_Message]
    ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    era: Era | None = None
    session: _Session | None = None
    marks: dict[str, tuple[HeaderMark, ...]] | None = None
    rejected: dict[str, str] = attrs.field(factory=dict)


class McpHttpSource:
    """An MCP server over Streamable HTTP as a tool source; build it with ``at.mcp.http``."""

    honours_cancellation = True
    """A cancelled call ends at once (its cleanup bounded): an actor may run it inline."""

    def __init__(
        self,
        *,
        name: str,
        url: str,
        client: HttpClient,
        timeout: float,
        end_timeout: float,
        on_list_changed: Callable[[], None] | None = None,
        max_answer_bytes: int = MAX_MESSAGE_BYTES,
        max_depth: int = MAX_DEPTH,
        listen_retry: float = LISTEN_RETRY_MIN,
        listen_retry_max: float = LISTEN_RETRY_MAX,
    ) -> None:
        self._name = name
        self._on_list_changed = on_list_changed
        self._listen_retry = (listen_retry, listen_retry_max)
        self._timeout = timeout
        self._end_timeout = min(timeout, end_timeout)
        self._max_depth = max_depth
        self._wire = HttpWire(
            client=client,
            url=url,
            timeout=timeout,
            max_answer_bytes=max_answer_bytes,
            max_depth=max_depth,
        )
        self._live: _Live | None = None

    @property
    def name(self) -> str:
        """The source's name, which prefixes its tools' names in an assembly."""
        return self._name

    def __repr__(self) -> str:
        return f"<McpHttpSource {self._name!r}>"

    async def discover(self) -> list[ToolDefinition]:
        """List the server's tools (every page of ``tools/list``).

        In the stateless protocol a tool whose ``x-mcp-header`` marks the protocol does not allow
        is left out, with a warning logged; the marks of the others are kept for calls.

        Raises:
            AuthenticationError: the server refused the client's credentials (401, 403).
            UnavailableError: no connection, a 408/429/5xx, no answer within ``timeout``.
            InvalidResponseError: an answer that is not MCP, or cursors that never end.
            UnsupportedError: the server speaks no version of MCP the source does.

        Cancellation stops the request and closes its response stream.
        """
        live = self._running()
        return await bounded(self._name, self._timeout, "tools/list", self._list_tools(live))

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Run a tool: its structured content when it gave some, else its content blocks.

        Raises:
            CallFailedError: the tool ran and said it failed (``isError``), in its own words.
            NotFoundError: the server has no such tool, or discover left it out.
            InvalidInputError: the server refused the arguments, in its own words.
            UnsupportedError: the tool asks for input first (``input_required``), or needs a
                capability the source does not have.
            AuthenticationError, UnavailableError, InvalidResponseError: as for ``discover``.

        Cancellation stops the call and closes its response stream.
        """
        check_input(self._name, input, max_depth=self._max_depth)
        return await bounded(
            self._name, self._timeout, "tools/call", self._call(self._running(), tool, input)
        )

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Held while the actor runs: the source's state lives as long as it is held.

        Entering it starts from nothing known (era, session, marks); leaving it ends a session
        the source began (DELETE), bounded by ``end_timeout`` and shielded, so it runs even when
        the actor is cancelled, and a failure of it is only logged.

        Raises:
            RuntimeError: it is held already (one source, one actor).
        """
        if self._live is not None:
            raise RuntimeError(
                f"the MCP source {self._name!r} is running already: spawn a source once"
            )
        live = _Live(loop=StateLoop(lambda message: self._handle(live, message), name=self._name))
        raised: Exception | None = None
        try:
            async with anyio.create_task_group() as tasks:
                await tasks.start(live.loop.run)
                self._live = live
                if self._on_list_changed is not None:
                    retry, retry_max = self._listen_retry
                    tasks.start_soon(
                        functools.partial(relay_list_changed, retry=retry, retry_max=retry_max),
                        self._name,
                        self.listen_once,
                        self._on_list_changed,
                    )
                try:
                    yield
                except Exception as error:  # noqa: BLE001 - the holder's own: raised as itself below
                    raised = error
                finally:
                    self._live = None
                    tasks.cancel_scope.cancel()
        finally:
            # The loop has stopped: ending the session is the incarnation's last change.
            await self._end_session(live)
        if raised is not None:
            # Not wrapped in the task group's group: `except UnavailableError` around the
            # block sees it.
            raise raised

    def _running(self) -> _Live:
        live = self._live
        if live is None:
            raise not_running("MCP", self._name)
        return live

    async def _handle(self, live: _Live, message: _Message) -> object:
        """Handle one message that changes the incarnation's state (only its loop calls it).

        Each is bounded by ``timeout``, since every later message waits for it.
        """
        if isinstance(message, _Listed):
            live.marks, live.rejected = message.marks, message.rejected
            return None
        with anyio.move_on_after(self._timeout):
            if isinstance(message, _FindEra):
                if live.era is None:
                    live.era = await self._find_era(live)
                    _log.info("mcp.era_found", source=self._name, era=live.era)
                return live.era
            if isinstance(message, _Renew) and live.session is message.ended:
                _log.info("mcp.session_lost", source=self._name)
                live.session = None
            if live.session is None:
                live.session = await self._begin_session(live)
            return live.session
        raise timed_out(self._name, "initialize", "source's timeout", self._timeout)

    async def listen_once(self, notified: Callable[[str], None]) -> None:
        """Hold one stream of the server's notifications open until it ends (see
        :mod:`amends_toolkit.actors._mcp_listen`)."""
        live = self._running()
        headers: Mapping[str, str]
        if await self._ensure_era(live) == "modern":
            message = listen_request(next(live.ids))
            headers = _modern_headers("subscriptions/listen")
        else:
            message, headers = None, (await self._ensure_session(live)).headers
        await self._wire.listen(message, headers=headers, on_notification=notified)

    # Eras and sessions.

    async def _ensure_era(self, live: _Live) -> Era:
        if live.era is not None:
            return live.era
        era = await live.loop.ask(_FindEra())
        assert era in ("modern", "session")  # the handler gives one
        return era

    async def _find_era(self, live: _Live) -> Era:
        """Ask ``server/discover``; only a result or a -32022 naming 2026-07-28 is that era.

        A refusal, a 5xx, a timeout or no connection is a failure, never a reason to fall back.
        """
        for attempt in range(2):
            message = request(next(live.ids), "server/discover", {"_meta": modern_meta()})
            try:
                answer = await self._wire.post(message, headers=_modern_headers("server/discover"))
            except ProtocolError:
                return "session"
            status, reply = answer.status, answer.message
            if outcome(status) in ("authentication", "unavailable"):
                raise error_for_status(
                    self._name,
                    status,
                    method="server/discover",
                    retry_after=retry_after(answer.retry_after),
                )
            if isinstance(reply, Response):
                versions = reply.result.get("supportedVersions")
                modern = (
                    200 <= status <= 299
                    and isinstance(versions, list)
                    and MODERN_VERSION in versions
                )
                return "modern" if modern else "session"
            if isinstance(reply, ErrorResponse) and reply.code == UNSUPPORTED_VERSION:
                data = reply.data if isinstance(reply.data, dict) else {}
                supported = data.get("supported")
                if not isinstance(supported, list) or not supported:
                    return "session"
                if MODERN_VERSION in supported:
                    if attempt == 0:
                        continue  # the server names the version we sent: send it once more
                    break
                if any(version in SESSION_VERSIONS for version in supported):
                    return "session"
                break
            return "session"
        raise UnsupportedError(
            source=self._name, message="the server speaks no version of MCP this source speaks"
        )

    async def _ensure_session(self, live: _Live) -> _Session:
        if live.session is not None:
            return live.session
        return await self._asked_session(live, _Begin())

    async def _asked_session(self, live: _Live, message: _Begin | _Renew) -> _Session:
        session = await live.loop.ask(message)
        assert isinstance(session, _Session)  # the handler gives one
        return session

    async def _begin_session(self, live: _Live) -> _Session:
        message = request(next(live.ids), "initialize", initialize_params())
        answer = await self._wire.post(message, headers={})
        version = session_version(self._name, self._result(answer, "initialize"))
        session_id = answer.session_id
        if session_id is not None and not (
            session_id and all(ord(c) in _VISIBLE_ASCII for c in session_id)
        ):
            raise InvalidResponseError(
                source=self._name, message="the server gave a session id a header cannot hold"
            )
        session = _Session(id=session_id, version=version)
        done = await self._wire.post(
            notification("notifications/initialized"), headers=session.headers
        )
        if not 200 <= done.status <= 299:
            raise error_for_status(self._name, done.status, method="notifications/initialized")
        _log.info("mcp.session_begun", source=self._name, version=version)
        return session

    async def _end_session(self, live: _Live) -> None:
        session, live.session = live.session, None
        if session is None or session.id is None:
            return
        with anyio.move_on_after(self._end_timeout, shield=True):
            try:
                status = await self._wire.delete(session.headers)
            except Unreachable as error:
                _log.info("mcp.session_end_failed", source=self._name, error=str(error))
                return
            _log.info("mcp.session_ended", source=self._name, status=status)

    async def _on_message(
        self, session: _Session | None, relay: _Relay | None, message: Request | Notification
    ) -> None:
        """A message the server sent before its answer: a call's progress goes to ``relay``; a
        request is answered in a session and ignored in the stateless protocol."""
        if isinstance(message, Notification):
            if relay is not None:
                await relay(message)
        elif session is not None:
            await self._answer_server(session, message)
        else:
            _log.debug("mcp.server_request_ignored", source=self._name, method=message.method)

    async def _answer_server(self, session: _Session, message: Request) -> None:
        """Answer a server's request in a session: ``ping`` as the spec asks, others refused."""
        if message.method == "ping":
            reply = result_response(message.id, {})
        else:
            reply = error_response(message.id, METHOD_NOT_FOUND, "Method not found")
            _log.info("mcp.server_request_refused", source=self._name, method=message.method)
        answer = await self._wire.post(reply, headers=session.headers)
        if not 200 <= answer.status <= 299:
            _log.info("mcp.server_answer_refused", source=self._name, status=answer.status)

    # Requests.

    def _send(
        self,
        live: _Live,
        method: str,
        params: JsonObject,
        *,
        name: str | None = None,
        marks: Mapping[str, str] | None = None,
        relay: _Relay | None = None,
    ) -> Awaitable[Response | ErrorResponse]:
        """Send one request in the era found and return its answer (a result or an error).

        In a session, a 404 ends it: another is begun once and the request sent again.
        Notifications before the answer go to ``relay``. A traced call's request is an MCP
        client span whose context goes to the server in ``params._meta``.
        """
        tracer = traced()
        if tracer is None:
            return self._post(live, method, params, name=name, marks=marks, relay=relay)
        return traced_request(
            tracer,
            method,
            name,
            params,
            functools.partial(self._post, live, method, name=name, marks=marks, relay=relay),
            transport="tcp",
            session=functools.partial(self._session_now, live),
        )

    def _session_now(self, live: _Live) -> tuple[str | None, str | None]:
        """The protocol version and the session id the last request was sent in."""
        if live.era == "modern":
            return MODERN_VERSION, None
        session = live.session
        return (None, None) if session is None else (session.version, session.id)

    async def _post(
        self,
        live: _Live,
        method: str,
        params: JsonObject,
        *,
        name: str | None = None,
        marks: Mapping[str, str] | None = None,
        relay: _Relay | None = None,
    ) -> Response | ErrorResponse:
        # The era and the session are read where known: awaiting the functions that find them
        # would make a coroutine on every request.
        era = live.era if live.era is not None else await self._ensure_era(live)
        if era == "modern":
            meta = params.get("_meta")
            meta = {**meta, **_MODERN_META} if isinstance(meta, dict) else _MODERN_META
            message = request(next(live.ids), method, {**params, "_meta": meta})
            headers = _modern_headers(method, name=name, marks=marks)
            on_message = None if relay is None else functools.partial(self._on_message, None, relay)
            answer = await self._wire.post(message, headers=headers, on_request=on_message)
            return self._reply(answer, method)
        session = live.session if live.session is not None else await self._ensure_session(live)
        for attempt in range(2):
            current = session
            id_ = next(live.ids)
            try:
                answer = await self._wire.post(
                    request(id_, method, params),
                    headers=current.headers,
                    on_request=functools.partial(self._on_message, current, relay),
                    resume_headers=current.headers,
                )
            except anyio.get_cancelled_exc_class():
                # A session's server does not take a closed stream as a cancellation: the
                # spec asks the client to say so.
                await self._cancelled(current, id_)
                raise
            if answer.status != 404 or current.id is None:
                return self._reply(answer, method)
            if attempt == 0:
                session = await self._asked_session(live, _Renew(current))
        raise UnavailableError(
            source=self._name, message=f"{method}: the server ended the session twice"
        )

    async def _cancelled(self, session: _Session, id_: int) -> None:
        message = notification(
            "notifications/cancelled", {"requestId": id_, "reason": "the caller left"}
        )
        with anyio.move_on_after(self._end_timeout, shield=True):
            try:
                await self._wire.post(message, headers=session.headers)
            except Unreachable as error:
                _log.info("mcp.cancel_failed", source=self._name, error=str(error))

    def _reply(self, answer: Answer, method: str) -> Response | ErrorResponse:
        """The answer's message; a status that says more than its body is raised as a reason."""
        reply = answer.message
        if 200 <= answer.status <= 299 and reply is not None:
            return reply
        if outcome(answer.status) == "failed" and isinstance(reply, ErrorResponse):
            return reply
        raise error_for_status(
            self._name,
            answer.status,
            method=method,
            retry_after=retry_after(answer.retry_after),
        )

    def _result(self, answer: Answer, method: str) -> JsonObject:
        reply = self._reply(answer, method)
        if isinstance(reply, ErrorResponse):
            raise error_for_rpc(self._name, reply, method=method)
        return reply.result

    # Tools.

    async def _list_tools(self, live: _Live) -> list[ToolDefinition]:
        listed, rejected = await list_tools(
            self._name,
            functools.partial(self._result_of, live, "tools/list"),
            check_marks=await self._ensure_era(live) == "modern",
        )
        marks = {name: tool.marks for name, tool in listed.items()}
        await live.loop.ask(_Listed(marks=marks, rejected=rejected))
        return [tool.definition for tool in listed.values()]

    async def _result_of(self, live: _Live, method: str, params: JsonObject) -> JsonObject:
        reply = await self._send(live, method, params)
        if isinstance(reply, ErrorResponse):
            raise error_for_rpc(self._name, reply, method=method)
        return reply.result

    def _headers_for(self, live: _Live, tool: str, arguments: JsonObject) -> dict[str, str]:
        # A source that has not listed sends no marks; the server's -32020 makes it list.
        if live.marks is None:
            return {}
        return param_headers(live.marks.get(tool, ()), arguments)

    async def _call(self, live: _Live, tool: str, arguments: JsonObject) -> JsonValue:
        """Run a tool, sending it again while the server asks (``input_required`` with only
        ``requestState``), and once more when it refused the call's headers (-32020) and they
        have changed since."""
        if tool in live.rejected:
            raise NotFoundError(
                source=self._name,
                message=f"{tool} was left out of discover: {live.rejected[tool]}",
            )
        # Progress is asked of the server only when someone listens (none asked, none kept).
        token: int | None = None
        relay: _Relay | None = None
        if (on_progress := listener()) is not None:
            token = next(live.ids)
            relay = progress_relay(on_progress, token)
        state: str | None = None
        for attempt in range(MAX_RESENDS + 1):
            params = call_params(tool, arguments, request_state=state, progress_token=token)
            marks = self._headers_for(live, tool, arguments)
            reply = await self._send(
                live, "tools/call", params, name=tool, marks=marks, relay=relay
            )
            if (
                isinstance(reply, ErrorResponse)
                and reply.code == HEADER_MISMATCH
                and live.era == "modern"
            ):
                reply = await self._marks_changed(
                    live, tool, arguments, params, marks, relay, reply
                )
            if isinstance(reply, ErrorResponse):
                raise error_for_rpc(self._name, reply, method="tools/call")
            outcome = read_call_result(reply.result)
            if isinstance(outcome, Complete):
                return outcome.value
            if isinstance(outcome, ToolFailed):
                raise tool_failed(self._name, outcome)
            if outcome.asks_input or outcome.request_state is None:
                raise asked_input(self._name, tool)
            if attempt < MAX_RESENDS:
                await anyio.sleep(resend_delay(attempt))
            state = outcome.request_state
        raise UnsupportedError(
            source=self._name,
            message=f"{tool} asked to be sent again more than {MAX_RESENDS} times",
        )

    async def _marks_changed(
        self,
        live: _Live,
        tool: str,
        arguments: JsonObject,
        params: JsonObject,
        marks: Mapping[str, str],
        relay: _Relay | None,
        refused: ErrorResponse,
    ) -> Response | ErrorResponse:
        """The server refused a call's headers (-32020): list the tools, and send the call once
        more if its marks now differ from those it was sent with; else the refusal."""
        await self._list_tools(live)
        if tool in live.rejected or live.marks is None or tool not in live.marks:
            raise NotFoundError(source=self._name, message=f"{tool} is no longer a usable tool")
        fresh = self._headers_for(live, tool, arguments)
        if fresh == marks:
            return refused
        _log.info("mcp.call_resent", source=self._name, reason="header marks changed")
        return await self._send(live, "tools/call", params, name=tool, marks=fresh, relay=relay)


def _modern_headers(
    method: str, *, name: str | None = None, marks: Mapping[str, str] | None = None
) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = encode_value(name)
    if marks:
        headers.update(marks)
    return headers


def http(
    *,
    name: str,
    url: str,
    client: HttpClient,
    timeout: float = 60.0,
    end_timeout: float = 5.0,
    on_list_changed: Callable[[], None] | None = None,
    max_answer_bytes: int = MAX_MESSAGE_BYTES,
    max_depth: int = MAX_DEPTH,
    listen_retry: float = LISTEN_RETRY_MIN,
    listen_retry_max: float = LISTEN_RETRY_MAX,
) -> McpHttpSource:
    """The source of an MCP server over Streamable HTTP.

    Args:
        name: The source's name, which prefixes its tools' names in an assembly.
        url: The server's MCP endpoint (``http`` or ``https``), e.g. ``https://host/mcp``.
        client: The host's ``httpx.AsyncClient`` (or ``httpx2.AsyncClient``), which carries the
            credentials; the source never builds one and never closes it.
        timeout: Seconds a discover or a call may take in all, begun sessions included; past
            it the operation fails as ``UnavailableError``. Each HTTP request is sent with it
            as its client timeout too.
        end_timeout: Seconds the source waits, when its actor stops, for the DELETE that ends
            its session, and for the ``notifications/cancelled`` of a cancelled call (never
            longer than ``timeout``).
        on_list_changed: Called each time the server says its tools changed
            (``notifications/tools/list_changed``), so that a host discovers again; it must
            not block. With it, the source holds a stream of the server's notifications open
            while its actor runs (``subscriptions/listen``, or a session's GET stream), on one
            of ``client``'s connections: a pool of ``n`` connections then carries ``n - 1``
            calls at once.

        max_answer_bytes: The most bytes (inflated) of one answer: a JSON body, or one line or
            event of a stream; reading stops there. A call answered with more fails as
            ``CallFailedError`` telling the model to ask for less; a listing as
            ``InvalidResponseError``.
        max_depth: How deep an answer (and an input) may nest; deeper is
            ``InvalidResponseError`` (an input: ``InvalidInputError``).
        listen_retry: Seconds before the stream of notifications (with ``on_list_changed``)
            is opened again after it ended; after a failure the wait doubles each time, up to
            ``listen_retry_max`` seconds.
        listen_retry_max: The longest wait before opening that stream again.


    Raises:
        ValueError: an empty name, a URL that is not absolute http(s) (or that the client
            cannot parse), a timeout that is not a positive number of seconds, or a limit that
            is not a positive int.
        TypeError: a client that is not an httpx-style async client (a sync ``httpx.Client``
            among them), the message naming the fix.
    """
    check_name(name, "tasks")
    check_url("url", url, "https://example.com/mcp")
    check_client(client)
    check_mcp_options(
        timeout=timeout,
        end_timeout=end_timeout,
        max_answer_bytes=max_answer_bytes,
        max_depth=max_depth,
        on_list_changed=on_list_changed,
    )
    check_seconds(listen_retry=listen_retry, listen_retry_max=listen_retry_max)
    if listen_retry > listen_retry_max:
        raise ValueError(
            f"listen_retry ({listen_retry}) must not be longer than listen_retry_max "
            f"({listen_retry_max})"
        )
    return McpHttpSource(
        name=name,
        url=url,
        client=client,
        timeout=float(timeout),
        end_timeout=float(end_timeout),
        on_list_changed=on_list_changed,
        max_answer_bytes=max_answer_bytes,
        max_depth=max_depth,
        listen_retry=float(listen_retry),
        listen_retry_max=float(listen_retry_max),
    )
