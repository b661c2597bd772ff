"""The MCP source over Streamable HTTP, in both eras of the protocol.

It speaks the stateless protocol of 2026-07-28 to a server that does, which it finds out with
``server/discover`` when it first needs the server; any other server is spoken to in a session
begun with ``initialize`` (2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05). It lists tools with
``tools/list`` and runs them with ``tools/call`` and does nothing else of MCP.

Its state (the era found, the session, the header marks it last listed) is a
:class:`~amends_toolkit.actors._mcp_session.Conversation` built fresh each time
:meth:`McpHttpSource.lifespan` is entered (each incarnation of its actor), which changes it only
by messages one task handles in order: so no lock guards it, and concurrent calls that all need
the era, or all meet the session's end, ask the server once. When the lifespan ends, after that
task, the session is ended with DELETE (bounded and shielded). This module holds what the source
does with tools: listing them, and a call sent again while the server asks (``requestState``) or
once more when the tool's header marks changed.
"""

from __future__ import annotations

import functools
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._errors import NotFoundError, UnsupportedError
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
    raised_as_itself,
    tool_failed,
)
from amends_toolkit.actors._mcp_errors import check_input, error_for_rpc
from amends_toolkit.actors._mcp_listen import LISTEN_RETRY_MAX, LISTEN_RETRY_MIN, relay_list_changed
from amends_toolkit.actors._mcp_listing import list_tools
from amends_toolkit.actors._mcp_session import Conversation
from amends_toolkit.actors._mcp_tracing import traced_request
from amends_toolkit.protocols.http import check_client
from amends_toolkit.protocols.mcp._headers import param_headers
from amends_toolkit.protocols.mcp._http import HttpClient, HttpWire
from amends_toolkit.protocols.mcp._jsonrpc import (
    HEADER_MISMATCH,
    MAX_MESSAGE_BYTES,
    ErrorResponse,
    Response,
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

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.actors._mcp_session import Relay

__all__ = ("McpHttpSource", "http")

_log = get_logger(__name__)


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
        self._live: Conversation | None = None

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
        live = Conversation(
            name=self._name, wire=self._wire, timeout=self._timeout, end_timeout=self._end_timeout
        )
        with raised_as_itself() as holder:
            try:
                async with anyio.create_task_group() as tasks:
                    await tasks.start(live.run)
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
                        with holder.hold(tasks):
                            yield
                    finally:
                        self._live = None
            finally:
                # The loop has stopped: ending the session is the incarnation's last change.
                await live.end()

    def _running(self) -> Conversation:
        live = self._live
        if live is None:
            raise not_running("MCP", self._name)
        return live

    async def listen_once(self, notified: Callable[[str], None]) -> None:
        """Hold one stream of the server's notifications open until it ends (see
        :mod:`amends_toolkit.actors._mcp_listen`)."""
        await self._running().listen(notified)

    # Requests.

    def _send(
        self,
        live: Conversation,
        method: str,
        params: JsonObject,
        *,
        name: str | None = None,
        marks: Mapping[str, str] | None = None,
        relay: Relay | None = None,
    ) -> Awaitable[Response | ErrorResponse]:
        """Send one request in the era found and return its answer (a result or an error), as
        :meth:`Conversation.post` does; a traced call's request is an MCP client span whose
        context goes to the server in ``params._meta``.
        """
        tracer = traced()
        if tracer is None:
            return live.post(method, params, name=name, marks=marks, relay=relay)
        return traced_request(
            tracer,
            method,
            name,
            params,
            functools.partial(live.post, method, name=name, marks=marks, relay=relay),
            transport="tcp",
            session=live.session_now,
        )

    # Tools.

    async def _list_tools(self, live: Conversation) -> list[ToolDefinition]:
        listed, rejected = await list_tools(
            self._name,
            functools.partial(self._result_of, live, "tools/list"),
            check_marks=await live.ensure_era() == "modern",
        )
        marks = {name: tool.marks for name, tool in listed.items()}
        await live.listed(marks, rejected)
        return [tool.definition for tool in listed.values()]

    async def _result_of(self, live: Conversation, method: str, params: JsonObject) -> JsonObject:
        reply = await self._send(live, method, params)
        if isinstance(reply, ErrorResponse):
            raise error_for_rpc(self._name, reply, method=method)
        return reply.result

    def _headers_for(self, live: Conversation, tool: str, arguments: JsonObject) -> dict[str, str]:
        # A source that has not listed sends no marks; the server's -32020 makes it list.
        if live.marks is None:
            return {}
        return param_headers(live.marks.get(tool, ()), arguments)

    async def _call(self, live: Conversation, tool: str, arguments: JsonObject) -> JsonValue:
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
        relay: Relay | None = None
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
        live: Conversation,
        tool: str,
        arguments: JsonObject,
        params: JsonObject,
        marks: Mapping[str, str],
        relay: Relay | None,
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
