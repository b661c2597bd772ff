"""What one incarnation of the MCP source over Streamable HTTP keeps with its server.

A :class:`Conversation` holds the era found (``server/discover``: the stateless protocol of
2026-07-28, or a session begun with ``initialize`` for any other server), the session, the ids
of its requests and the header marks of its last listing, and sends each request in the era
found. Its state changes only by messages one task handles in order (its ``StateLoop``, which
the source's lifespan runs): finding the era, beginning the session, renewing it after the
server ended it (a 404: begun once more and the request sent again), taking a listing's marks.
So no lock guards it, and concurrent requests that all need the era, or all meet the session's
end, ask the server once. :meth:`Conversation.end` ends the session with DELETE (bounded and
shielded) after that task has stopped.

The source (:mod:`amends_toolkit.actors._mcp`) builds one each time its lifespan is entered and
speaks to the server only through it; this module knows no source.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

import anyio
import attrs

from amends_toolkit._errors import InvalidResponseError, UnavailableError, UnsupportedError
from amends_toolkit._log import get_logger
from amends_toolkit.actors._mcp_core import session_version
from amends_toolkit.actors._mcp_errors import error_for_rpc, error_for_status
from amends_toolkit.actors._mcp_listen import listen_request
from amends_toolkit.protocols.http import outcome, retry_after
from amends_toolkit.protocols.mcp._headers import HeaderMark, encode_value
from amends_toolkit.protocols.mcp._http import Unreachable
from amends_toolkit.protocols.mcp._jsonrpc import (
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
from amends_toolkit.runtime import StateLoop
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from anyio.abc import TaskStatus

    from amends_toolkit._json import JsonObject
    from amends_toolkit.protocols.mcp._http import Answer, HttpWire

__all__ = ("Conversation", "Era", "Relay")

_log = get_logger(__name__)

Era = Literal["modern", "session"]
Relay: TypeAlias = "Callable[[Notification], Awaitable[None]]"
"""Where the notifications a server sends before its answer go (a call's progress)."""

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


class Conversation:
    """One incarnation's state with the server, and the requests sent in it.

    Only its loop's handler changes ``era``, ``marks`` and ``rejected`` (and the session); the
    source reads them. ``ids`` gives each request (and each progress token) its number.

    Args:
        name: The source's name, for reasons and the log.
        wire: The source's HTTP wire to the server.
        timeout: The bound of each message the loop handles (every later one waits for it).
        end_timeout: The bound of the DELETE that ends the session, and of the
            ``notifications/cancelled`` of a cancelled request.
    """

    def __init__(self, *, name: str, wire: HttpWire, timeout: float, end_timeout: float) -> None:
        self._name = name
        self._wire = wire
        self._timeout = timeout
        self._end_timeout = end_timeout
        self._loop: StateLoop[_Message] = StateLoop(self._handle, name=name)
        self._session: _Session | None = None
        self.ids: itertools.count[int] = itertools.count(1)
        self.era: Era | None = None
        self.marks: dict[str, tuple[HeaderMark, ...]] | None = None
        self.rejected: dict[str, str] = {}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Handle the messages that change the state until cancelled (the lifespan runs it)."""
        await self._loop.run(task_status=task_status)

    async def ensure_era(self) -> Era:
        """The server's era, found with ``server/discover`` once however many ask at once.

        Raises:
            AuthenticationError, UnavailableError: ``server/discover`` was refused or failed.
            UnsupportedError: the server speaks no version of MCP the source does.
        """
        if self.era is not None:
            return self.era
        era = await self._loop.ask(_FindEra())
        assert era in ("modern", "session")  # the handler gives one
        return era

    async def listed(
        self, marks: dict[str, tuple[HeaderMark, ...]], rejected: dict[str, str]
    ) -> None:
        """Take a listing's header marks, and the tools it left out with why."""
        await self._loop.ask(_Listed(marks=marks, rejected=rejected))

    def session_now(self) -> tuple[str | None, str | None]:
        """The protocol version and the session id the last request was sent in."""
        if self.era == "modern":
            return MODERN_VERSION, None
        session = self._session
        return (None, None) if session is None else (session.version, session.id)

    async def post(
        self,
        method: str,
        params: JsonObject,
        *,
        name: str | None = None,
        marks: Mapping[str, str] | None = None,
        relay: Relay | None = None,
    ) -> Response | ErrorResponse:
        """Send one request in the era found and return its answer (a result or an error).

        In a session, a 404 ends it: another is begun once and the request sent again; a
        cancelled request is told to the server with ``notifications/cancelled``.
        Notifications before the answer go to ``relay``. ``name`` and ``marks`` are the
        2026-07-28 request's ``Mcp-Name`` and its tool's header marks.

        Raises:
            UnavailableError: the server ended the session twice, or as for ``ensure_era``.
            AuthenticationError, InvalidResponseError: a status that says more than its body.
        """
        # The era and the session are read where known: awaiting the functions that find them
        # would make a coroutine on every request.
        era = self.era if self.era is not None else await self.ensure_era()
        if era == "modern":
            meta = params.get("_meta")
            meta = {**meta, **_MODERN_META} if isinstance(meta, dict) else _MODERN_META
            message = request(next(self.ids), method, {**params, "_meta": meta})
            headers = _modern_headers(method, name=name, marks=marks)
            on_message = None if relay is None else functools.partial(self._on_message, None, relay)
            answer = await self._wire.post(message, headers=headers, on_request=on_message)
            return self._reply(answer, method)
        session = self._session if self._session is not None else await self._ensure_session()
        for attempt in range(2):
            current = session
            id_ = next(self.ids)
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
                session = await self._asked_session(_Renew(current))
        raise UnavailableError(
            source=self._name, message=f"{method}: the server ended the session twice"
        )

    async def listen(self, notified: Callable[[str], None]) -> None:
        """Hold one stream of the server's notifications open until it ends, in the era found
        (see :mod:`amends_toolkit.actors._mcp_listen`)."""
        headers: Mapping[str, str]
        if await self.ensure_era() == "modern":
            message = listen_request(next(self.ids))
            headers = _modern_headers("subscriptions/listen")
        else:
            message, headers = None, (await self._ensure_session()).headers
        await self._wire.listen(message, headers=headers, on_notification=notified)

    async def end(self) -> None:
        """End the session begun, if any (DELETE), bounded by ``end_timeout`` and shielded; a
        failure is only logged. Called once the loop has stopped: its last change."""
        session, self._session = self._session, None
        if session is None or session.id is None:
            return
        with anyio.move_on_after(self._end_timeout, shield=True):
            try:
                status = await self._wire.delete(session.headers)
            except Unreachable as error:
                _log.info("mcp.session_end_failed", source=self._name, error=str(error))
                return
            _log.info("mcp.session_ended", source=self._name, status=status)

    # The loop's handler.

    async def _handle(self, message: _Message) -> object:
        """Handle one message that changes the state (only the loop calls it).

        Each is bounded by ``timeout``, since every later message waits for it.
        """
        if isinstance(message, _Listed):
            self.marks, self.rejected = message.marks, message.rejected
            return None
        with anyio.move_on_after(self._timeout):
            if isinstance(message, _FindEra):
                if self.era is None:
                    self.era = await self._find_era()
                    _log.info("mcp.era_found", source=self._name, era=self.era)
                return self.era
            if isinstance(message, _Renew) and self._session is message.ended:
                _log.info("mcp.session_lost", source=self._name)
                self._session = None
            if self._session is None:
                self._session = await self._begin_session()
            return self._session
        raise timed_out(self._name, "initialize", "source's timeout", self._timeout)

    async def _find_era(self) -> Era:
        """Ask ``server/discover``; only a result or a -32022 naming 2026-07-28 is that era.

        A refusal, a 5xx, a timeout or no connection is a failure, never a reason to fall back.
        """
        for attempt in range(2):
            message = request(next(self.ids), "server/discover", {"_meta": modern_meta()})
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

    async def _ensure_session(self) -> _Session:
        if self._session is not None:
            return self._session
        return await self._asked_session(_Begin())

    async def _asked_session(self, message: _Begin | _Renew) -> _Session:
        session = await self._loop.ask(message)
        assert isinstance(session, _Session)  # the handler gives one
        return session

    async def _begin_session(self) -> _Session:
        message = request(next(self.ids), "initialize", initialize_params())
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

    # What a request meets on its way.

    async def _cancelled(self, session: _Session, id_: int) -> None:
        message = notification(
            "notifications/cancelled", {"requestId": id_, "reason": "the caller left"}
        )
        with anyio.move_on_after(self._end_timeout, shield=True):
            try:
                await self._wire.post(message, headers=session.headers)
            except Unreachable as error:
                _log.info("mcp.cancel_failed", source=self._name, error=str(error))

    async def _on_message(
        self, session: _Session | None, relay: Relay | None, message: Request | Notification
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


def _modern_headers(
    method: str, *, name: str | None = None, marks: Mapping[str, str] | None = None
) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = encode_value(name)
    if marks:
        headers.update(marks)
    return headers
