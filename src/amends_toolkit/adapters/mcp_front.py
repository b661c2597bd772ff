"""An MCP server front: a host's toolkit served as an MCP server, its policy intact.

Needs the ``mcp-server`` extra (``pip install -e './amends-toolkit[mcp-server]'``, the official ``mcp``
SDK). Build one with :func:`amends_toolkit.adapters.mcp_server`::

    front = at.adapters.mcp_server(toolkit, name="tasks", approve=ask_a_person)
    app = front.streamable_http_app()        # Starlette ASGI app, MCP at /mcp: serve it with uvicorn
    await front.run_stdio()                  # or serve one client over stdin and stdout

The SDK speaks the protocol (the stateless 2026-07-28 era and sessions of the earlier versions,
on one endpoint); the toolkit decides everything else: which tools exist, what input a tool takes
(the SDK validates no argument against a schema), and what a call answers. A source's media
(MCP content blocks) go to the client as blocks, and its progress to a client that asked.
``tools/list`` answers ``page_size`` tools a page, from a listing built once per toolkit.

A call that needs approval asks the front's ``approve``, and
:func:`~amends_toolkit.adapters.ask_client` asks the client that called: by
``elicitation/create`` in a session, and in 2026-07-28 by an ``input_required`` answer that the
client answers by sending the call again with its person's decision and a signed
``requestState`` (:class:`~amends_toolkit.adapters._asking.ApprovalStates`).
A call from code in the middle of a run (code mode) that a 2026-07-28 client is asked about
pauses its run in the app's lifespan until the call comes again (:data:`MAX_PAUSED` at once).

A front may serve several toolkits, each under a name, and a ``select`` function that names the
one a caller is served (the gateway's profiles)::

    front = at.adapters.mcp_server(
        {"eng": (eng_toolkit, eng_members), "ops": (ops_toolkit, ())}, name="tasks", select=pick
    )
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
    _error_response,
)
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import Route

from amends_toolkit._content import content_parts
from amends_toolkit._errors import ApprovalRequired
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_counts
from amends_toolkit._peer import cut, shown
from amends_toolkit.adapters._asking import (
    APPROVAL_STATE_TTL,
    ApprovalStates,
    StateRefused,
    asking_client,
)
from amends_toolkit.adapters._callers import CALLER_SCOPE_KEY, Authenticator, Refused, caller_of
from amends_toolkit.adapters._mcp_server import LIST_PAGE_SIZE, MAX_SESSIONS, SESSION_IDLE_TIMEOUT
from amends_toolkit.runtime import Member, Session, Toolkit

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence

    from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from starlette.types import ASGIApp, Receive, Scope, Send

    from amends_toolkit._definitions import Annotations
    from amends_toolkit._errors import Failure
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit._progress import Progress
    from amends_toolkit.adapters._callers import Caller
    from amends_toolkit.runtime import ToolResult
    from amends_toolkit.runtime._session import Approve, OnError

__all__ = ("SELECTED_SCOPE_KEY", "Select", "ToolkitServer")

Select: TypeAlias = "Callable[[Caller | None], str]"
"""Names the toolkit a caller is served (``None``: a front without an authenticator, or stdio);
raises :class:`~amends_toolkit.adapters.Refused` to refuse the caller."""
SELECTED_SCOPE_KEY: Final = "amends_toolkit.toolkit"
"""The key of the ASGI scope under which the front keeps the name of a request's toolkit."""
_ONE: Final = ""
"""The name of a front's toolkit when it serves only one."""

_log = get_logger(__name__)
_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
_BLOCKS: TypeAdapter[list[types.ContentBlock]] = TypeAdapter(list[types.ContentBlock])


def _never(name: str, input: JsonObject) -> bool:
    return False


class _Served(NamedTuple):
    """A toolkit as served, and its listing: replaced at once, so a listing and a call never
    see two toolkits."""

    toolkit: Toolkit
    tools: Sequence[types.Tool]


_NOTHING: Final = _Served(Toolkit.from_entries(()), ())
"""What a name no toolkit is served under has: no tool to list or call."""


class ToolkitServer:
    """A toolkit served as an MCP server: ``tools/list`` and ``tools/call``, nothing else.

    Build it with :func:`amends_toolkit.adapters.mcp_server`, which documents the options.

    Attributes:
        toolkit: The tools served: the toolkit given, less the tools that always need approval
            when no ``approve`` was given, and any whose schema MCP cannot list (logged).
        toolkits: Each toolkit served, by its name, as ``toolkit`` says.
        server: The SDK's low-level :class:`mcp.server.lowlevel.Server`, for what this class does
            not wrap (another transport, middleware).
    """

    def __init__(
        self,
        toolkit: Toolkit | Mapping[str, tuple[Toolkit, Iterable[Member]]],
        *,
        name: str,
        version: str = "",
        instructions: str | None = None,
        approve: Approve | None = None,
        on_error: OnError | None = None,
        timeout: float | None = None,
        members: Iterable[Member] = (),
        page_size: int = LIST_PAGE_SIZE,
        select: Select | None = None,
        approval_key: bytes | None = None,
        approval_ttl: float = APPROVAL_STATE_TTL,
    ) -> None:
        if isinstance(toolkit, Mapping):
            if select is None:
                raise TypeError("mcp_server of several toolkits needs select= to pick a caller's")
            toolkits = dict(toolkit)
        elif isinstance(toolkit, Toolkit):
            if select is not None:
                raise TypeError("select= picks among several toolkits: give a mapping of them")
            toolkits = {_ONE: (toolkit, members)}
        else:
            raise TypeError(f"mcp_server serves a Toolkit, not {type(toolkit).__name__}")
        for served, _ in toolkits.values():
            if not isinstance(served, Toolkit):
                raise TypeError(f"mcp_server serves a Toolkit, not {type(served).__name__}")
        check_counts(page_size=page_size)
        self._approve: Approve = _never if approve is None else approve
        self._on_error = on_error
        self._timeout = timeout
        self._page_size = page_size
        self._select: Select = (lambda caller: _ONE) if select is None else select
        self._states = ApprovalStates(key=approval_key, ttl=approval_ttl)
        self._parking: _Parking | None = None
        self._served = self._serve_all(toolkits)
        # Refuse a bad timeout now, not at the first call.
        Session(_NOTHING.toolkit, approve=self._approve, on_error=on_error, timeout=timeout)
        self.server: Server[Any] = Server(
            name,
            version=version,
            instructions=instructions,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    @property
    def toolkit(self) -> Toolkit:
        """The tools served now, by a front of one toolkit (see the class's attributes).

        Raises:
            ValueError: the front serves several toolkits (see ``toolkits``).
        """
        if set(self._served) != {_ONE}:
            raise ValueError("this front serves several toolkits: see its toolkits")
        return self._served[_ONE].toolkit

    @property
    def toolkits(self) -> Mapping[str, Toolkit]:
        """Each toolkit served now, by its name (``""`` for a front of one toolkit)."""
        return {name: served.toolkit for name, served in self._served.items()}

    def streamable_http_app(
        self,
        *,
        path: str = "/mcp",
        host: str = "127.0.0.1",
        json_response: bool = False,
        transport_security: TransportSecuritySettings | None = None,
        max_sessions: int = MAX_SESSIONS,
        session_idle_timeout: float = SESSION_IDLE_TIMEOUT,
        authenticator: Authenticator | None = None,
    ) -> Starlette:
        """The Starlette ASGI app that serves the toolkit over Streamable HTTP at ``path``.

        One endpoint speaks both eras: a request in 2026-07-28 is answered statelessly, and any
        other client begins a session with ``initialize`` (2025-11-25 down to 2024-11-05). A
        session is bound to the client that began it: until callers have identities, to its
        peer address, so another client's request with its id is answered 404, as an unknown
        id is.

        Args:
            path: Where the endpoint is.
            host: Where the app listens: for ``127.0.0.1``, ``localhost`` or ``::1`` the SDK turns
                on DNS-rebinding protection (only those hosts and origins are let in) unless
                ``transport_security`` says otherwise.
            json_response: Answer the sessions' requests as JSON rather than event streams.
            transport_security: The SDK's allowed hosts and origins.
            max_sessions: Sessions open at once (``MAX_SESSIONS`` of
                :mod:`amends_toolkit.adapters._mcp_server`: 1,000); past it an idle one ends
                (the one idle longest of the peer holding the most), and when none is idle a
                new one is refused with 503.
            session_idle_timeout: Seconds a session may go with no request in flight before it
                ends (600).
            authenticator: Asked about every request to the endpoint before the SDK sees it
                (see :mod:`amends_toolkit.adapters._callers`): a refused request is answered as
                its :class:`~amends_toolkit.adapters.Refused` says; an admitted one carries its
                :class:`~amends_toolkit.adapters.Caller` (:func:`~amends_toolkit.adapters.caller_of`),
                and a session is bound to that caller instead of the peer address. Its
                ``routes()`` are served beside the endpoint, unauthenticated. A front of several
                toolkits then asks its ``select`` about the caller: a
                :class:`~amends_toolkit.adapters.Refused` it raises is answered as the
                authenticator's are, and the request is served the toolkit it names alone.

        Every route of the app, the endpoint and any a host adds to ``app.router.routes`` (a
        health check, metrics), is behind that one Host and Origin check: a foreign ``Host``
        is answered 421, a foreign ``Origin`` 403.

        Raises:
            ValueError: ``max_sessions`` or ``session_idle_timeout`` is not positive.

        The app's lifespan runs its session manager, and holds the runs of 2026-07-28 calls
        paused for a client's answer (they end with it): serve it with an ASGI server that runs
        lifespans (uvicorn does), or enter ``app.router.lifespan_context(app)``.
        """
        if transport_security is None and host in ("127.0.0.1", "localhost", "::1"):
            # As the SDK's own app does (Server.streamable_http_app).
            transport_security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        sessions = _Sessions(
            self.server,
            json_response=json_response,
            security_settings=transport_security,
            session_idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
        )
        app = Starlette(
            routes=[
                Route(path, endpoint=StreamableHTTPASGIApp(sessions)),
                *(() if authenticator is None else authenticator.routes()),
            ],
            lifespan=lambda app: self._lifespan(sessions),
        )
        app.add_middleware(_Admitted, path=path, authenticator=authenticator, select=self._select)
        # The SDK checks at its endpoint alone; the same settings guard every route.
        if transport_security is not None and transport_security.enable_dns_rebinding_protection:
            app.add_middleware(_HostChecked, check=TransportSecurityMiddleware(transport_security))
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, sessions: _Sessions) -> AsyncIterator[None]:
        async with sessions.run(), anyio.create_task_group() as group:
            self._parking = _Parking(group)
            try:
                yield
            finally:
                self._parking = None
                group.cancel_scope.cancel()  # paused runs end with the app

    async def run_stdio(self) -> None:
        """Serve one client over the process's stdin and stdout until stdin closes.

        While it serves, what the process writes to stdout goes to stderr, so no stray print
        breaks the protocol. Cancelling it stops serving; calls still running are cancelled.
        """
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    def replace(self, toolkit: Toolkit, *, members: Iterable[Member] = ()) -> None:
        """Serve another toolkit from now on (a refreshed catalog), with the same options, by a
        front of one toolkit; :meth:`replace_all` replaces several.

        Calls running finish on the toolkit they began on; the next ``tools/list`` and
        ``tools/call`` see the new one. Telling clients that the list changed is the host's.

        The listing is built here, once, in work linear in the toolkit (a large one takes
        seconds): a server of a large toolkit calls it in a worker thread, as the gateway does
        (``await anyio.to_thread.run_sync(functools.partial(front.replace, toolkit))``); the
        new toolkit and its listing are served together once it returns.
        """
        if self._served.keys() != {_ONE}:
            raise ValueError("this front serves several toolkits: replace them with replace_all")
        self._served = self._serve_all({_ONE: (toolkit, members)})

    def replace_all(self, toolkits: Mapping[str, tuple[Toolkit, Iterable[Member]]]) -> None:
        """Serve these toolkits, by name, from now on, in place of all served before: as
        :meth:`replace` does, each toolkit's listing built here, once, and all served together
        once it returns. A name ``select`` gives that is not among them is served no tool.
        """
        if self._served.keys() == {_ONE} and _ONE not in toolkits:
            raise ValueError("this front serves one toolkit: replace it with replace")
        self._served = self._serve_all(dict(toolkits))

    def _serve_all(
        self, toolkits: Mapping[str, tuple[Toolkit, Iterable[Member]]]
    ) -> Mapping[str, _Served]:
        return {
            name: self._serve(toolkit, members) for name, (toolkit, members) in toolkits.items()
        }

    def _serve(self, toolkit: Toolkit, members: Iterable[Member]) -> _Served:
        if self._approve is _never:
            # A server cannot ask a person: a tool that always needs approval is not offered,
            # and a call that needs it by its input is refused as a person's refusal would be.
            toolkit = Toolkit.from_entries(
                entry for entry in toolkit.entries() if entry.tool.needs_approval is not True
            )
        hints = {
            (member.source.name, definition.name): definition.annotations
            for member in members
            for definition in member.definitions
        }
        listed = {
            entry.name: types.Tool(
                name=entry.tool.name,
                description=entry.tool.description,
                input_schema=_object_root(entry.tool.input_schema),
                annotations=None if entry.route is None else _annotations(hints.get(entry.route)),
            )
            for entry in toolkit.entries()
        }
        unlistable = _unlistable(list(listed.values()), self._page_size)
        if unlistable:
            toolkit = Toolkit.from_entries(e for e in toolkit.entries() if e.name not in unlistable)
        return _Served(
            toolkit, tuple(tool for name, tool in listed.items() if name not in unlistable)
        )

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        # For the SDK's Mcp-Param header check, which says no caller: a tool's schema is its
        # source's whichever toolkit serves it (a presentation's tools, its presentation's),
        # and the call is answered from the caller's toolkit alone.
        for served in self._served.values():
            tool = served.toolkit.tools.get(name)
            if tool is not None:
                return tool.input_schema
        return None

    def _selected(self, ctx: ServerRequestContext[Any]) -> _Served:
        """The toolkit of the request's caller: as the endpoint's middleware chose it, or
        (over stdio, with no request) as ``select`` names it for no caller."""
        request = cast("Request | None", ctx.request)
        if request is not None and SELECTED_SCOPE_KEY in request.scope:
            name = request.scope[SELECTED_SCOPE_KEY]
        else:
            try:
                name = self._select(None)
            except Refused as refused:
                raise MCPError(code=types.INVALID_REQUEST, message=refused.message) from None
        return self._served.get(name, _NOTHING)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = self._selected(ctx).tools
        start = 0 if params is None or params.cursor is None else _position(params.cursor)
        end = start + self._page_size
        return types.ListToolsResult(
            tools=list(tools[start:end]), next_cursor=str(end) if end < len(tools) else None
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        toolkit = self._selected(ctx).toolkit
        if params.name not in toolkit:
            # A protocol error, as the spec asks for a tool the server does not have; the
            # client's name is echoed cut, as any text from outside is.
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {cut(params.name)}")
        arguments: JsonValue = {} if params.arguments is None else params.arguments
        request = cast("Request | None", ctx.request)
        call = _Called(params.name, arguments, "" if request is None else _peer(request.scope))
        again = params.request_state is not None
        answer: bool | None = None
        if again:
            # A call sent again with a person's answer (2026-07-28): its state is checked before
            # anything of the call runs, and taken once.
            try:
                paused = self._states.open(
                    params.request_state, tool=call.name, input=arguments, caller=call.caller
                )
            except StateRefused as refused:
                _log.info("mcp_server.approval_state_refused", tool=cut(params.name))
                raise MCPError(code=types.INVALID_PARAMS, message=str(refused)) from None
            answer = _decision(params.input_responses)
            _log.info("mcp_server.client_answered", tool=call.name, approved=answer)
            if paused is not None:
                return await self._resume(paused, answer, call)
        asker = _Asker(ctx, toolkit, call.name, arguments, answer=answer, again=again)
        # Progress is relayed only to a client that asked for it with a token, and only while
        # its request is open: a run apart (which may pause and outlive it) stops relaying
        # once the request is answered.
        asked = ctx.meta is not None and ctx.meta.get("progress_token") is not None
        parking = self._parking
        parks = asker.modern and parking is not None and asker.can_ask()
        answered = anyio.Event()

        async def relay(name: str, progress: Progress) -> None:
            if not answered.is_set():
                await ctx.session.report_progress(
                    progress.progress, progress.total, progress.message
                )

        async def invoke() -> ToolResult:
            # A session per call: approval, on_error and timeout behave as in a harness, and a
            # call the client cancels is cancelled alone.
            with asking_client(asker):
                async with Session(
                    toolkit,
                    approve=self._approve,
                    on_error=self._on_error,
                    timeout=self._timeout,
                    on_progress=relay if asked else None,
                ) as session:
                    result = await session.invoke(call.name, arguments)
            return result

        if not parks:
            return self._finished(asker, await invoke(), call)
        assert parking is not None
        # In a run of its own, so that a call from code in the middle of it (code mode) can
        # wait, paused, for an answer that comes in another request.
        run = _Run(parking, ttl=self._states.ttl)
        asker.run, run.asker = run, asker
        parking.start(run, invoke)
        try:
            return await self._follow(run, asker, call)
        finally:
            answered.set()

    async def _resume(
        self, paused: str, answer: bool | None, call: _Called
    ) -> types.CallToolResult | types.InputRequiredResult:
        run = None if self._parking is None else self._parking.take(paused)
        if run is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="The paused run this answers is gone: it waited longer than it may, or"
                " another server holds it. Call the tool again.",
            )
        run.answer(answer)
        assert run.asker is not None
        return await self._follow(run, run.asker, call)

    async def _follow(
        self, run: _Run, asker: _Asker, call: _Called
    ) -> types.CallToolResult | types.InputRequiredResult:
        """What a run comes to next: its end, or a question for the client, while the run
        waits (paused) for the call to come again with the answer."""
        try:
            step = await run.next()
        except anyio.get_cancelled_exc_class():
            run.scope.cancel()  # the client left before the run asked or ended: it ends too
            raise
        if isinstance(step, types.ElicitRequest):
            return types.InputRequiredResult(
                input_requests={_QUESTION: step},
                request_state=self._states.seal(
                    tool=call.name, input=call.arguments, caller=call.caller, run=run.park()
                ),
            )
        if step is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="The paused run this answers is gone: it waited longer than it may."
                " Call the tool again.",
            )
        return self._finished(asker, step, call)

    def _finished(
        self, asker: _Asker, result: ToolResult, call: _Called
    ) -> types.CallToolResult | types.InputRequiredResult:
        if asker.question is not None:
            # The tool did not run: the client asks its person, and sends the call again.
            return types.InputRequiredResult(
                input_requests={_QUESTION: asker.question},
                request_state=self._states.seal(
                    tool=call.name, input=call.arguments, caller=call.caller
                ),
            )
        return _answer(result)


class _Called(NamedTuple):
    """The call a request makes, as a ``requestState`` binds it."""

    name: str
    arguments: JsonValue
    caller: str


MAX_PAUSED: Final = 1_000
"""Runs (code mode's) that wait at once, paused, for a 2026-07-28 client to send its call again
with a person's answer; each waits ``approval_ttl`` seconds at most, then ends. Past it, a call
from code that needs approval reads ``ApprovalRequired`` and does not run."""


class _Parking:
    """The runs of 2026-07-28 calls whose client can be asked, in a task group of the app's
    lifespan: a run may pause for an answer that comes in another request."""

    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group
        self._max_paused = MAX_PAUSED
        self.waiting = 0
        self._paused: dict[str, _Run] = {}

    @property
    def full(self) -> bool:
        return self.waiting >= self._max_paused

    def start(self, run: _Run, invoke: Callable[[], Awaitable[ToolResult]]) -> None:
        self._group.start_soon(run.main, invoke)

    def park(self, run: _Run) -> str:
        key = secrets.token_hex(16)
        self._paused[key] = run
        run.key = key
        return key

    def take(self, key: str) -> _Run | None:
        return self._paused.pop(key, None)

    def forget(self, run: _Run) -> None:
        if run.key is not None:
            self._paused.pop(run.key, None)


class _Run:
    """One call run apart (see :class:`_Parking`): it gives its questions and its end to
    whichever request follows it, and takes the answers the client sends. It asks one question
    at a time, and waits for its answer: a step (a question, or the result) is given once."""

    def __init__(self, parking: _Parking, *, ttl: float) -> None:
        self._parking = parking
        self._ttl = ttl
        self.scope = anyio.CancelScope()
        self.key: str | None = None
        self.asker: _Asker | None = None
        self._step: types.ElicitRequest | ToolResult | None = None
        self._stepped = anyio.Event()
        self._ended = False
        self._answer: bool | None = None
        self._answered = anyio.Event()

    async def main(self, invoke: Callable[[], Awaitable[ToolResult]]) -> None:
        try:
            with self.scope:
                self._give(await invoke())
        finally:
            self._parking.forget(self)
            self._ended = True
            self._stepped.set()  # a request that follows it learns that it ended

    def _give(self, step: types.ElicitRequest | ToolResult) -> None:
        self._step = step
        self._stepped.set()

    async def next(self) -> types.ElicitRequest | ToolResult | None:
        """The run's next question, or its result; ``None`` once it ended without one."""
        await self._stepped.wait()
        step, self._step = self._step, None
        if not self._ended:
            self._stepped = anyio.Event()
        return step

    def park(self) -> str:
        return self._parking.park(self)

    def answer(self, answer: bool | None) -> None:
        self._answer = answer
        self._answered.set()

    async def ask(self, question: types.ElicitRequest) -> bool:
        """Put a question to the client and wait, paused, for its answer (``approval_ttl``
        seconds at most: then the whole run ends, and nothing more of it runs)."""
        if self._parking.full:
            raise ApprovalRequired("too many paused runs wait for their clients' answers")
        self._parking.waiting += 1
        try:
            self._give(question)
            with anyio.move_on_after(self._ttl):
                await self._answered.wait()
                self._answered = anyio.Event()
                if self._answer is None:
                    raise ApprovalRequired("the client's answer is not the form's: approve or deny")
                return self._answer
        finally:
            self._parking.waiting -= 1
        _log.info("mcp_server.paused_run_expired", ttl=self._ttl)
        self.scope.cancel()
        await anyio.lowlevel.checkpoint()  # cancelled here: the run goes no further
        raise ApprovalRequired("the run ended: nobody answered in time")


_QUESTION: Final = "approval"
"""The key of the approval question in an ``input_required`` result, and of its answer."""
_DECISION: Final = "decision"
"""The form's one field: ``"approve"`` or ``"deny"``."""
_FORM: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        _DECISION: {
            "type": "string",
            "title": "Decision",
            "description": "Approve runs the tool with this input; deny does not.",
            "enum": ["approve", "deny"],
            "enumNames": ["Approve", "Deny"],
        }
    },
    "required": [_DECISION],
}


class _Asked(ApprovalRequired):
    """The question is put to a 2026-07-28 client as an ``input_required`` result: the call
    ends here, unrun, and its client sends it again with the answer."""


class _Asker:
    """How one ``tools/call`` asks its client (a :class:`~amends_toolkit.adapters._asking.
    ClientAsker`): ``elicitation/create`` in a session; in 2026-07-28 the question it leaves in
    ``question``, or the answer the call was sent again with."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any],
        toolkit: Toolkit,
        called: str,
        arguments: JsonValue,
        *,
        answer: bool | None,
        again: bool,
    ) -> None:
        self._ctx = ctx
        self._toolkit = toolkit
        self._called = called
        self._arguments = arguments
        self._answer = answer
        self._again = again
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self.question: types.ElicitRequest | None = None
        self.run: _Run | None = None
        """The run this call runs in apart, which can wait for an answer (2026-07-28)."""

    def can_ask(self) -> bool:
        capabilities = self._ctx.session.client_capabilities
        elicitation = None if capabilities is None else capabilities.elicitation
        # An empty elicitation capability is form mode (the 2025-06-18 spelling).
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)

    async def ask(self, name: str, input: JsonObject) -> bool:
        message = self._message(name, input)
        if self.modern:
            if name != self._called or input != self._arguments:
                if self.run is None:
                    raise ApprovalRequired(
                        "a call from code in the middle of a run can wait for a 2026-07-28"
                        " client's answer only in a front's app (streamable_http_app)"
                    )
                form = types.ElicitRequestFormParams(message=message, requested_schema=_FORM)
                return await self.run.ask(types.ElicitRequest(params=form))
            if self._again:
                answer, self._answer, self._again = self._answer, None, False  # one answer
                if answer is None:
                    raise ApprovalRequired("the client's answer is not the form's: approve or deny")
                return answer
            self.question = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=_FORM)
            )
            raise _Asked("the client is asked: the call is answered input_required")
        try:
            result = await self._ctx.session.elicit_form(
                message, _FORM, related_request_id=self._ctx.request_id
            )
        except (
            MCPError,  # the client's error answer, or no channel to send the question on
            ValidationError,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
        ) as error:
            raise ApprovalRequired(
                f"the client could not be asked: {type(error).__name__}"
            ) from None
        decided = _decided(result)
        if decided is None:
            raise ApprovalRequired("the client's answer is not the form's: approve or deny")
        return decided

    def _message(self, name: str, input: JsonObject) -> str:
        if name in self._toolkit:
            source = self._toolkit.entry(name).source_name
        else:  # a call from code: the tool is the presented toolkit's, not the front's
            source = f"called from code, in {self._called}"
        return (
            "A tool call needs your approval.\n"
            f"Tool: {shown(name, limit=MAX_NAME_SHOWN)}\n"
            f"Source: {shown(source, limit=MAX_NAME_SHOWN)}\n"
            f"Input: {shown(json.dumps(input, ensure_ascii=False))}"
        )


MAX_NAME_SHOWN: Final = 200
"""The most characters of a tool's or a source's name an approval form shows."""


def _decided(result: types.ElicitResult) -> bool | None:
    """A person's decision in a form's answer: accepted with approve (True) or deny (False),
    declined or dismissed (False: they saw the question, and did not approve); ``None`` for an
    answer that is not the form's."""
    if result.action != "accept":
        return False
    decision = (result.content or {}).get(_DECISION)
    return {"approve": True, "deny": False}.get(decision) if isinstance(decision, str) else None


def _decision(responses: types.InputResponses | None) -> bool | None:
    """The decision a call sent again carries (``None``: none that is the form's)."""
    response = None if responses is None else responses.get(_QUESTION)
    return _decided(response) if isinstance(response, types.ElicitResult) else None


_MAX_CURSOR: Final = 12
"""Digits of a cursor: past any toolkit's length."""


def _position(cursor: str) -> int:
    """Where the page a cursor names begins: a cursor is the position of its page's first tool,
    as ``_list_tools`` wrote it. A listing that spans a ``replace`` may miss or repeat a tool;
    the client is told that the list changed, and lists it again."""
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= _MAX_CURSOR):
        raise MCPError(
            code=types.INVALID_PARAMS, message="Invalid cursor: list the tools again without one."
        )
    return int(cursor)


class _HostChecked:
    """An ASGI middleware: an HTTP request passes only the SDK's Host and Origin check."""

    def __init__(self, app: ASGIApp, *, check: TransportSecurityMiddleware) -> None:
        self.app = app
        self._check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._check.validate_request(Request(scope))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


_OPENER: ContextVar[str] = ContextVar("mcp_front_opener", default="")
"""The peer of the request that may open a session, for the session manager to bind it to."""


class _Admitted:
    """An ASGI middleware: a request to the endpoint passes only with the caller its
    authenticator establishes and the toolkit ``select`` names for it, both kept in its scope;
    any other route passes as it is."""

    def __init__(
        self, app: ASGIApp, *, path: str, authenticator: Authenticator | None, select: Select
    ) -> None:
        self.app = app
        self._path = path
        self._authenticator = authenticator
        self._select = select

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self._path:
            try:
                caller = None
                if self._authenticator is not None:
                    caller = await self._authenticator.authenticate(Request(scope))
                    scope[CALLER_SCOPE_KEY] = caller
                scope[SELECTED_SCOPE_KEY] = self._select(caller)
            except Refused as refused:
                answer = refused.response()
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _peer(scope: Scope) -> str:
    """Who sent a request, for binding a session to it: the caller the authenticator
    established, else the peer's address, not its port (a client's connection pool opens
    connections from many ports)."""
    caller = caller_of(scope)
    if caller is not None:
        return caller.id
    client = scope.get("client")
    return "" if client is None else "address:" + str(client[0])


class _Sessions(StreamableHTTPSessionManager):
    """The SDK's session manager, with each session bound to the peer that opened it and, at the
    cap, an idle session ended to make room rather than every new client refused: the one idle
    longest of the peer that holds the most.

    The SDK (mcp 2.3) offers neither: this reaches into its ``_handle_stateful_request``,
    ``_admit_session``, ``_discard_session`` and ``_server_instances``; the gateway's tests
    over a real process fail if those change.
    """

    def __init__(self, app: Server[Any], **options: Any) -> None:
        super().__init__(app, **options)
        self._peers: dict[str, str] = {}

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        who = _peer(scope)
        if key is not None and key in self._server_instances and self._peers.get(key) != who:
            # Answered as an unknown id is (the spec's 404), so an id's owner cannot be probed.
            await _error_response("Session not found", 404)(scope, receive, send)
            return
        token = _OPENER.set(who)
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            _OPENER.reset(token)

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._evict_idlest()
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._peers[transport.mcp_session_id] = _OPENER.get()
        return transport

    def _evict_idlest(self) -> None:
        # A session's idle scope has a finite deadline only while no request of it is in flight
        # (the SDK's transport keeps it at infinity while one is): the smallest was idle longest.
        idle = [
            (transport.idle_scope.deadline, key)
            for key, transport in self._server_instances.items()
            if transport.idle_scope is not None and transport.idle_scope.deadline < math.inf
        ]
        if not idle:
            return  # every session is busy: the SDK refuses the new one with 503
        # Of the peer holding the most sessions first: one client's flood ends its own.
        held = Counter(self._peers.values())
        _, key = max(idle, key=lambda pair: (held[self._peers.get(pair[1], "")], -pair[0]))
        transport = self._server_instances.pop(key)
        self._session_owners.pop(key, None)
        self._peers.pop(key, None)
        assert transport.idle_scope is not None
        # Ended as an idle session is: its task leaves its loop and discards it.
        transport.idle_scope.cancel()
        _log.info("mcp_server.session_evicted", sessions=len(self._server_instances))

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        scope = transport.idle_scope
        if session_id in self._server_instances and scope is not None and scope.cancel_called:
            _log.info("mcp_server.session_expired", sessions=len(self._server_instances) - 1)
        self._peers.pop(session_id, None)
        await super()._discard_session(session_id, transport)


def _answer(result: ToolResult) -> types.CallToolResult:
    if result.failure is not None:
        return _failed(result.failure)
    value = result.value
    if content_parts(value) is not None:
        # MCP content blocks (an MCP tool's, or an HTTP source's binary answer) go on as blocks.
        try:
            return types.CallToolResult(content=_BLOCKS.validate_python(value))
        except ValidationError:
            _log.info("mcp_server.content_sent_as_json")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=value if isinstance(value, dict) else None,
    )


def _failed(failure: Failure) -> types.CallToolResult:
    # The message is the model's text of the failure (ToolSourceError.model_message): no address,
    # no credential, nothing of the host's logs.
    return types.CallToolResult(content=[types.TextContent(text=failure.message)], is_error=True)


def _object_root(schema: JsonObject) -> dict[str, Any]:
    # MCP requires "type": "object" at the root; the toolkit accepts only objects anyway, so
    # saying so where the schema does not changes nothing of what a call may send.
    return dict(schema) if "type" in schema else {"type": "object", **schema}


def _unlistable(tools: list[types.Tool], page_size: int) -> set[str]:
    """The tools that some protocol version cannot list (a root type that is not "object", a
    malformed ``properties``): served, one would fail every listing, so they are left out.

    Checked a page at a time, as the pages are listed: no one step holds the interpreter for
    the whole toolkit, so a worker thread that builds a listing leaves the event loop its turns.
    """

    def listable(batch: list[types.Tool]) -> bool:
        # Dumped as the SDK's runner dumps a handler's result, then sieved as it sieves it.
        data = types.ListToolsResult(tools=batch).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        try:
            for version in _VERSIONS:
                serialize_server_result("tools/list", version, data)
        except ValidationError:
            return False
        return True

    left_out: set[str] = set()
    for start in range(0, len(tools), page_size):
        page = tools[start : start + page_size]
        if not listable(page):
            left_out.update(tool.name for tool in page if not listable([tool]))
    for name in sorted(left_out):
        _log.warning("mcp_server.tool_left_out", tool=name, reason="schema MCP cannot list")
    return left_out


def _annotations(hints: Annotations | None) -> types.ToolAnnotations | None:
    if hints is None:
        return None
    annotations = types.ToolAnnotations(
        title=hints.title,
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )
    return annotations if annotations.model_dump(exclude_none=True) else None
