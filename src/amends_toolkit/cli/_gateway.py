"""``amends-toolkit serve``: one process serving a toolkit to many MCP clients.

Every source runs as an actor of one :class:`~amends_toolkit.Runtime`; the toolkit assembled
from their catalogs under the ``[policy]`` (and presented as ``[serve] presentation`` says) is
served over Streamable HTTP by :func:`amends_toolkit.adapters.mcp_server`, both eras on one
endpoint, each call in a session of its own. Beside it: ``/healthz`` (open to all) and
``/metrics`` (behind ``[serve] metrics_key`` when given).

Every request to the endpoint is asked who its caller is, as ``[auth]`` says (``cli/_auth.py``),
and is served the toolkit of its caller's profile: the first ``[[profiles]]`` that matches it
(``cli/_profiles.py``), else ``[policy]``'s, else it is refused (403). Each profile's toolkit is
assembled once per refresh, from its sources, under its policy and presentation; its
``limits`` hold each caller's calls before any source sees one (``cli/_limits.py``). A session is
its caller's alone, and each call's log line names its caller and profile. Every route is
behind a Host and Origin check, whatever the host: its own names, loopback's, and
``[serve] allowed_hosts`` and ``allowed_origins``.

The catalog is refreshed on SIGHUP, every ``refresh_interval`` seconds if given, and when a
source says its tools changed; then the gateway's own clients are told (a session's standalone
stream; a 2026-07-28 client's ``subscriptions/listen``). Tools that would share a name
(``at.NameClash``, an upstream's doing here) never stop it: a refresh serves on the tools of
before, a start leaves them out; either logs what clashed. SIGINT or SIGTERM stop it: new calls
are refused, running ones get ``grace`` seconds to finish, then sessions end and the sources'
processes stop. So does the SIGHUP of a hangup: one that comes when the terminal the gateway
started on is gone (a SIGHUP while it is there, or with none from the start, as under a service
manager, refreshes; so does every SIGHUP of a gateway started with it ignored, as ``nohup``
starts one). The sources' processes run in sessions of their own: the terminal's hangup never
reaches them, and the gateway ends them itself.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import os
import signal
import socket
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, cast

import anyio
import attrs
import httpx
import mcp_types as types
import uvicorn
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from amends_toolkit import _tracing, adapters
from amends_toolkit._errors import (
    ApprovalRequired,
    ConnectionRequired,
    Failure,
    LimitExceeded,
    NameClash,
    NoApproval,
    ToolSourceError,
)
from amends_toolkit._log import get_logger
from amends_toolkit._peer import cut
from amends_toolkit.adapters import Refused, ask_client, caller_of, client_can_be_asked
from amends_toolkit.adapters.mcp_front import SELECTED_SCOPE_KEY
from amends_toolkit.cli._approvals import GatewayApprovals
from amends_toolkit.cli._auth import KeyAuthenticator, OpenAuthenticator, expand_key, required_auth
from amends_toolkit.cli._config import DEFAULT_PROFILE, ConfigError, Presentation, expand_header
from amends_toolkit.cli._connections import FILES_RESERVED, raise_open_files, timed_protocol
from amends_toolkit.cli._limits import CallerLimits, limits_storage
from amends_toolkit.cli._metrics import GatewayMetrics
from amends_toolkit.cli._output import silence
from amends_toolkit.cli._per_caller import PerCallerSource, serving
from amends_toolkit.cli._pinning import SessionPinning
from amends_toolkit.cli._policy import GlobPolicy
from amends_toolkit.cli._profiles import profile_of
from amends_toolkit.cli._sources import build_per_caller, build_source, open_connections
from amends_toolkit.cli._telemetry import exporting
from amends_toolkit.cli._terminal import has_terminal
from amends_toolkit.cli._uvicorn import QuietServer
from amends_toolkit.presentations import MontyRuntime, code_mode, tool_search
from amends_toolkit.runtime import (
    ActorRef,
    Member,
    Runtime,
    ToolEntry,
    Toolkit,
    ToolSource,
    assemble,
    calling_as,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

    from anyio.abc import TaskGroup, TaskStatus
    from limits.storage import Storage
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession
    from opentelemetry.context import Context
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from amends_toolkit._definitions import Decision, ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.adapters import Authenticator, Caller
    from amends_toolkit.adapters.mcp_front import ToolkitServer
    from amends_toolkit.cli._config import AuthConfig, GatewayConfig, ServeConfig
    from amends_toolkit.cli._connect import Connector
    from amends_toolkit.cli._credentials import CredentialStore
    from amends_toolkit.cli._output import Output
    from amends_toolkit.presentations import CodeRuntime

__all__ = ("Gateway",)

_log = get_logger("amends_toolkit.gateway")

NOTIFY_TIMEOUT = 1.0
"""The longest the gateway waits to tell one session that the list changed."""
MAX_CLASHES_SHOWN = 10
"""Clashing names a clash's warning lists (it counts them all)."""
MAX_CLASHING_SHOWN = 5
"""Tools a clash's warning lists for one name."""
MAX_TOOL_NAME_SHOWN = 100
"""The most characters of an upstream's tool name a warning shows."""
MAX_UNNAMED_SHOWN = 10
"""Tools the note of those no pattern names lists (it counts them all; the log lists them all)."""
MAX_CALLER_SHOWN = 100
"""The most characters of a caller's name (a token's ``sub``) a log line shows."""
ASKED = "asked"
"""The outcome and decision, in a call's log line, of a call answered ``input_required``: its
client asks its person, and sends the call again with the answer (a line of its own)."""
LIMITED = "refused_limits"
"""The outcome, in a call's log line and the failures metric, of a call refused for its
profile's ``limits`` (it reached no source)."""
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@attrs.define
class _Call:
    """What the layers of one call learned of it, for its log line and its metrics."""

    code: str | None = None
    approved_by: str | None = None
    """Who approved the call, when it needed approval and was approved: ``"client"`` (the
    client that called, by its elicitation), ``"terminal"``, ``"approver <kind>:<name>"`` (never an issuer's address)."""
    caller: str | None = None
    """The caller's ``Caller.id`` (none for ``type = "none"``, whose id is an address)."""
    profile: str = DEFAULT_PROFILE
    """The profile that serves the caller."""


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("gateway_call", default=None)

Signature = tuple[tuple[str, str, str], ...]
Served = dict[str, tuple[Toolkit, list[Member]]]
"""Each profile's toolkit and its members, by the profile's name."""


@attrs.frozen(kw_only=True)
class _Profile:
    """A profile as the gateway assembles it: its sources, presentation and policy."""

    name: str
    sources: tuple[str, ...] | None
    """None: every source."""
    presentation: Presentation
    policy: GlobPolicy
    what: str
    """How its notes name its policy: ``[policy]``, or ``profile eng's policy``."""


class Gateway:
    """The ``serve`` command's process; :meth:`run` serves until it is told to stop."""

    def __init__(
        self, config: GatewayConfig, *, output: Output, approve_on_terminal: bool = False
    ) -> None:
        self.config = config
        self.output = output
        self.approve_on_terminal = approve_on_terminal
        self.profiles = [
            _Profile(
                name=profile.name,
                sources=profile.sources,
                presentation=profile.presentation or config.serve.presentation,
                policy=GlobPolicy(profile.policy),
                what=f"profile {profile.name}'s policy",
            )
            for profile in config.profiles
        ]
        if config.policy is not None:
            self.profiles.append(
                _Profile(
                    name=DEFAULT_PROFILE,
                    sources=None,
                    presentation=config.serve.presentation,
                    policy=GlobPolicy(config.policy),
                    what="[policy]",
                )
            )
        self.limits: CallerLimits | None = None
        self.refs: dict[str, ActorRef] = {}
        """The actors of the shared sources (each per-caller source's are its own)."""
        self.sources: dict[str, ToolSource] = {}
        """Every source, in the configuration's order: an actor, or a per-caller source."""
        self.connectors: list[Connector] = []
        """The ``/connect`` routes of the per-caller OAuth sources."""
        self.catalog: dict[str, tuple[ToolDefinition, ...]] = {}
        self.failed: dict[str, ToolSourceError] = {}
        self.discovered: set[str] = set()
        self.metrics = GatewayMetrics(lambda: {n: r.statistics() for n, r in self.refs.items()})
        self.front: ToolkitServer | None = None
        self.port: int | None = None
        self._bus = InMemorySubscriptionBus()
        # A session's latest request context, by its Mcp-Session-Id: its connection's standalone
        # stream is where a session client hears that the list changed.
        self._sessions: dict[str, ServerSession] = {}
        self._reported: set[tuple[str, str]] = set()
        self._unmatched: set[tuple[str, str]] = set()
        self._clash_noted: frozenset[str] = frozenset()
        self._draining = False
        self._in_flight = 0
        self._idle = anyio.Event()
        self._refresh_wanted = anyio.Event()
        self.approval = GatewayApprovals(config, terminal=approve_on_terminal)
        self._listing = anyio.Lock()
        self._sandbox: CodeRuntime | None = None
        self._served: dict[str, Signature] = {}
        self._tools = 0
        self._stopper: TaskGroup | None = None
        self._hangup_stops = False
        self._on_terminal: tuple[int, ...] = ()
        self.server: uvicorn.Server | None = None

    # The whole life of the process.

    async def run(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start every source, discover, serve; return once stopped by SIGINT or SIGTERM."""
        serve = self.config.serve
        # Before the receiver replaces it: SIGHUP ignored (nohup) means "outlive the terminal".
        self._hangup_stops = signal.getsignal(signal.SIGHUP) != signal.SIG_IGN and has_terminal()
        self._on_terminal = tuple(fd for fd in (0, 1, 2) if os.isatty(fd))
        auth = required_auth(self.config)
        # Keys are read at start, before any source does work: a missing or short one stops it.
        authenticator = self._local_authenticator(auth)
        # [policy]'s callers have no limits: the binding keys give it none (each source's share,
        # max_in_flight_per_caller, still bounds them).
        self.limits = CallerLimits(
            {profile.name: profile.limits for profile in self.config.profiles},
            storage=self._limits_storage(),
        )
        metrics_key = (
            None
            if serve.metrics_key is None
            else _Audited(
                KeyAuthenticator(
                    {
                        "metrics": expand_key(
                            serve.metrics_key, what="[serve] metrics_key", path=self.config.path
                        )
                    }
                ),
                "metrics_key",
            )
        )
        approval_key = (
            None
            if serve.approval_key is None
            else expand_key(
                serve.approval_key, what="[serve] approval_key", path=self.config.path
            ).encode()
        )
        async with AsyncExitStack() as stack:
            # First in, last out: the spans of the last calls are sent after they end.
            await stack.enter_async_context(exporting(self.config.telemetry))
            host_check = logging.getLogger("mcp.server.transport_security")
            host_check.addFilter(_host_refused)
            stack.callback(host_check.removeFilter, _host_refused)
            # Taken from the start: a signal while the sources start is handled once serving.
            received = stack.enter_context(
                anyio.open_signal_receiver(signal.SIGHUP, signal.SIGINT, signal.SIGTERM)
            )
            await stack.enter_async_context(self.approval.open())
            pool = await open_connections(stack)
            runtime = await stack.enter_async_context(Runtime())
            store = await self._credential_store(stack)
            # Where per-caller sources stop the actors they let go; left before the runtime.
            evictions = await stack.enter_async_context(anyio.create_task_group())
            spawn = {
                "call_timeout": serve.call_timeout,
                "max_per_caller": serve.max_in_flight_per_caller,
            }
            for source_config in self.config.sources:
                if source_config.credentials == "per-caller":
                    assert store is not None  # checked when the configuration was read
                    assert self.config.credentials is not None
                    built = await build_per_caller(
                        source_config,
                        stack,
                        runtime=runtime,
                        store=store,
                        tasks=evictions,
                        max_callers=self.config.credentials.max_callers,
                        spawn={**spawn, "idle_timeout": self.config.credentials.idle_timeout},
                        base_url=self.public_url,
                        refresh_before=self.config.credentials.refresh_before,
                        connect_timeout=self.config.credentials.connect_timeout,
                        on_list_changed=self.want_refresh,
                    )
                    if built.connector is not None:
                        self.connectors.append(built.connector)
                else:
                    built = await build_source(
                        source_config, stack, connections=pool, on_list_changed=self.want_refresh
                    )
                for skip in built.skipped:
                    self.output.note(f"{source_config.name}: skipped {skip}")
                if source_config.credentials == "per-caller":
                    self.sources[source_config.name] = built.source
                else:
                    ref = await runtime.spawn(built.source, **spawn)  # type: ignore[arg-type]
                    self.sources[source_config.name] = self.refs[source_config.name] = ref
            if any(profile.presentation == "code" for profile in self.profiles):
                self._sandbox = await stack.enter_async_context(MontyRuntime())
            with self.output.status("Discovering the sources' tools"):
                catalog = await self._discover()
            toolkits: Served = {}
            for profile in self.profiles:
                try:
                    toolkits[profile.name] = self._assemble(profile, catalog)
                except NameClash as clash:
                    self._clashed(clash, refresh=False)
                    toolkits[profile.name] = self._assemble(profile, catalog, left_out=clash)
            self.catalog = catalog
            self.front = adapters.mcp_server(
                toolkits,
                name="amends-toolkit",
                version="0.1.0",
                approve=self._approve,
                select=self._select,
                approval_key=approval_key,
            )
            self._served = self._signatures(self.front)
            self._tools = len(self._union(self.front))
            self._instrument(self.front)
            # Bound before the app is built: the port is part of the resource OAuth names.
            listening = _listen(serve.host, serve.port)
            stack.callback(listening.close)
            self.port = listening.getsockname()[1]
            if authenticator is None:
                authenticator = self._oauth_authenticator(auth, stack)
            app = self._app(self.front, _Audited(authenticator, auth.type), metrics_key)
            served_app: Any = app
            if serve.replicas is not None and serve.replica is not None:
                served_app = SessionPinning(app, replica=serve.replica, replicas=serve.replicas)
            files = raise_open_files()
            connections = max(1, min(serve.max_connections, files - FILES_RESERVED))
            if connections < serve.max_connections:
                self.output.note(
                    f"serving at most {connections} connections, not max_connections = "
                    f"{serve.max_connections}: the process may open {files} files (ulimit -n)"
                )
            server = QuietServer(
                uvicorn.Config(
                    served_app,
                    host=serve.host,
                    port=serve.port,
                    http=timed_protocol(
                        header_timeout=serve.header_timeout, body_timeout=serve.body_timeout
                    ),
                    limit_concurrency=connections,
                    log_level="warning",
                    lifespan="on",
                    timeout_graceful_shutdown=1,
                    # Longer than a balancer's upstream keep-alive (nginx: 60 s), so the
                    # gateway never closes a connection the balancer is about to reuse.
                    timeout_keep_alive=75,
                    # The gateway sizes its own work: let many clients connect at once.
                    backlog=4096,
                )
            )
            self.server = server
            served = anyio.Event()

            async def serve_http() -> None:
                try:
                    await server.serve(sockets=[listening])
                finally:
                    served.set()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(serve_http)
                while not server.started and not served.is_set():  # noqa: ASYNC110 - uvicorn offers no event
                    await anyio.sleep(0.01)
                self._report_ready()
                task_status.started(self.port)
                tasks.start_soon(self._refreshes)
                tasks.start_soon(self._signals, received)
                await served.wait()
                tasks.cancel_scope.cancel()
        _log.info("gateway.stopped")

    def _local_authenticator(self, auth: AuthConfig) -> Authenticator | None:
        """The authenticator of ``type = "keys"`` or ``"none"``; none for ``"oauth"``, whose
        resource is the gateway's URL, known once it listens (``_oauth_authenticator``).

        Raises:
            ConfigError: a key's variable is not set, or a key is too short.
        """
        if auth.type == "keys":
            return KeyAuthenticator.from_config(auth, path=self.config.path)
        if auth.type == "none":
            return OpenAuthenticator()
        return None

    async def _credential_store(self, stack: AsyncExitStack) -> CredentialStore | None:
        """``[credentials] store``, opened under the key from the environment; none without a
        ``[credentials]`` table.

        Raises:
            ConfigError: no key, a wrong key, or a store that cannot be opened.
        """
        if self.config.credentials is None:
            return None
        from amends_toolkit.cli._credentials import StoreError, open_store

        try:
            store = await open_store(self.config.credentials.store)
        except StoreError as error:
            raise ConfigError(f"{self.config.path}: [credentials] {error}") from None
        stack.push_async_callback(store.aclose)
        return store

    def _limits_storage(self) -> Storage:
        """``[serve] limits_storage``, its ``${VAR}`` expanded.

        Raises:
            ConfigError: its variable is not set, or it cannot be used.
        """
        uri = self.config.serve.limits_storage
        if uri.startswith("${"):
            try:
                uri = expand_header(uri)
            except KeyError as missing:
                raise ConfigError(
                    f"{self.config.path}: [serve] limits_storage: set the environment "
                    f"variable {missing.args[0]}"
                ) from None
        try:
            return limits_storage(uri)
        except ValueError as error:
            raise ConfigError(f"{self.config.path}: [serve] {error}") from None

    def public_url(self) -> str:
        """The gateway's address as callers reach it: ``[credentials] public_url``, else its
        own, once it listens."""
        credentials = self.config.credentials
        if credentials is not None and credentials.public_url is not None:
            return credentials.public_url
        return self.url.removesuffix(self.config.serve.path)

    @property
    def url(self) -> str:
        """The MCP endpoint's URL, once the gateway listens."""
        serve = self.config.serve
        host = f"[{serve.host}]" if ":" in serve.host else serve.host
        return f"http://{host}:{self.port}{serve.path}"

    def _oauth_authenticator(self, auth: AuthConfig, stack: AsyncExitStack) -> Authenticator:
        """``type = "oauth"``: the gateway as an OAuth protected resource at its own URL, with
        one HTTP client for the issuer's metadata and keys, closed when the gateway stops."""
        # Here, not at the top: PyJWT and its cryptography are needed by oauth alone.
        from amends_toolkit.cli._oauth_resource import FETCH_TIMEOUT, OAuthResource

        client = httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False)
        stack.push_async_callback(client.aclose)
        try:
            return OAuthResource.from_config(auth, resource=self.url, client=client)
        except ValueError as error:
            raise ConfigError(f"{self.config.path}: [auth] {error}") from None

    def _select(self, caller: Caller | None) -> str:
        """The profile that serves ``caller``: the first of ``[[profiles]]`` that matches it,
        else ``[policy]``'s.

        Raises:
            Refused: no profile serves it (403, and a ``gateway.refused`` line).
        """
        name = profile_of(self.config.profiles, caller)
        if name is not None:
            return name
        if self.config.policy is not None:
            return DEFAULT_PROFILE
        _log.info("gateway.refused", reason="no_profile", status=403, **_audited(caller))
        raise Refused(
            403,
            "No profile of this gateway serves this caller, and it has no [policy] for callers "
            "no profile matches: ask its operator to add one.",
            reason="no_profile",
        )

    @staticmethod
    def _union(front: ToolkitServer) -> Toolkit:
        """Every tool served, to any profile, each name once."""
        entries = {e.name: e for toolkit in front.toolkits.values() for e in toolkit.entries()}
        return Toolkit.from_entries(entries.values())

    def _report_ready(self) -> None:
        assert self.front is not None
        if self.config.auth is not None and self.config.auth.type == "none":
            self.output.note(
                '[auth] type = "none": anyone on this machine can call every tool served'
            )
        if self.config.policy is None:
            self.output.note(
                "no [policy]: a caller that no [[profiles]] matches is refused (403)"
                if self.config.profiles
                else "no [policy] and no [[profiles]]: every caller is refused (403); add a [policy]"
            )
        union = self._union(self.front)
        self.output.served(
            self.url,
            union,
            failed={name: f"{e.reason}: {e.message}" for name, e in self.failed.items()},
        )
        if not self.approval.has_approvers() and any(
            t.needs_approval is not False for t in union.tools.values()
        ):
            self.output.note(
                "calls that need approval ask the client that called when it can be asked "
                "(elicitation), and are refused otherwise: give a profile approvers "
                "(approval = { approvers = ... }, deciding at /approvals) or run with "
                "--approve-on-terminal to be asked on this terminal"
            )

    async def _signals(self, received: AsyncIterator[int]) -> None:
        # Held until the server has stopped: a second SIGTERM while calls drain changes nothing.
        async with anyio.create_task_group() as tasks:
            self._stopper = tasks
            async for signum in received:
                if signum != signal.SIGHUP:
                    self.stop(reason=signal.Signals(signum).name)
                elif self._hung_up():
                    silence(*self._on_terminal)  # each write to a terminal hung up fails
                    self.stop(reason="SIGHUP")
                else:
                    self.want_refresh()

    def _hung_up(self) -> bool:
        """Whether a SIGHUP is the hangup of the terminal the gateway started on: the kernel
        has taken the terminal from the session, and its descriptors answer no more."""
        return self._hangup_stops and not (
            has_terminal() and all(os.isatty(fd) for fd in self._on_terminal)
        )

    def stop(self, *, reason: str) -> None:
        """Stop as SIGTERM does: refuse new calls, let running ones finish within the grace."""
        server = self.server
        if self._draining or self._stopper is None or server is None:
            return
        _log.info("gateway.stopping", reason=reason)
        self.output.note("stopping: running calls may finish")
        self._draining = True
        self._stopper.start_soon(self._drain, server)

    async def _drain(self, server: uvicorn.Server) -> None:
        if self._in_flight:
            with anyio.move_on_after(self.config.serve.grace):
                await self._idle.wait()
        server.should_exit = True

    # The catalog.

    def want_refresh(self) -> None:
        """Ask for a refresh soon (many asks before it runs make one refresh)."""
        self._refresh_wanted.set()

    async def _refreshes(self) -> None:
        interval = self.config.serve.refresh_interval
        while True:
            with anyio.move_on_after(interval if interval is not None else float("inf")):
                await self._refresh_wanted.wait()
            self._refresh_wanted = anyio.Event()
            await self.refresh()

    async def refresh(self) -> None:
        """Discover every source again, serve the new toolkit, tell clients when it changed.

        When names clash in the new catalogs, the tools served before are served on (each
        call still reaches its source), and the clash is logged; the next refresh tries again.
        """
        front = self.front
        assert front is not None
        catalog = await self._discover()

        def serve() -> tuple[dict[str, Signature], int]:
            # A clash in any profile's toolkit serves every profile on its tools of before.
            served = {p.name: self._assemble(p, catalog) for p in self.profiles}
            front.replace_all(served)
            return self._signatures(front), len(self._union(front))

        # The toolkits, their listings and signatures are work linear in the catalog (seconds
        # for tens of thousands of tools): off the event loop, one refresh at a time.
        try:
            signatures, self._tools = await anyio.to_thread.run_sync(serve)
        except NameClash as clash:
            self._clashed(clash, refresh=True)
            return
        self.catalog = catalog
        # Every session is told when any profile's toolkit changed: a client lists again, and
        # one whose toolkit did not change reads the same list.
        changed = signatures != self._served
        self._served = signatures
        _log.info("gateway.refreshed", tools=self._tools, changed=changed)
        if changed:
            await self._tell_clients()

    async def _list_as(self, caller: Caller, bearer: str | None) -> None:
        """List the per-caller sources that have no tools yet (no caller had credentials when
        they were last listed) as this caller, once at a time; when one has tools now, the
        toolkits are assembled again (and clients told), before this caller's list is read."""
        unlisted = [
            (name, source)
            for name, source in self.sources.items()
            if isinstance(source, PerCallerSource) and not self.catalog.get(name)
        ]
        if not unlisted or self._listing.locked():
            return
        async with self._listing:
            found = False
            with serving(caller, bearer):
                for name, source in unlisted:
                    try:
                        found = bool(await source.discover()) or found
                    except ToolSourceError as error:
                        _log.debug("gateway.list_as_failed", source=name, reason=error.reason)
            if found:
                # Listed again through the actor just made: no caller's context is needed.
                await self.refresh()

    async def _discover(self) -> dict[str, tuple[ToolDefinition, ...]]:
        """Every source's catalog, listed again; one that fails to list keeps its last."""
        catalog = dict(self.catalog)

        async def one(name: str, source: ToolSource) -> None:
            try:
                catalog[name] = tuple(await source.discover())
            except ConnectionRequired:
                # A per-caller source no caller has credentials for yet: nothing failed (the
                # gateway stays ready); it is listed once a caller connects, or lists.
                self.failed.pop(name, None)
                _log.info("gateway.not_connected_yet", source=name)
            except ToolSourceError as error:
                self.failed[name] = error
                # The whole message (it may name an address or a command) is the operator's.
                _log.warning(
                    "gateway.discover_failed",
                    source=name,
                    reason=error.reason,
                    error=error.message,
                )
            else:
                self.failed.pop(name, None)
            self.discovered.add(name)

        async with anyio.create_task_group() as tasks:
            for name, source in self.sources.items():
                tasks.start_soon(one, name, source)
        return catalog

    def _assemble(
        self,
        profile: _Profile,
        catalog: dict[str, tuple[ToolDefinition, ...]],
        *,
        left_out: NameClash | None = None,
    ) -> tuple[Toolkit, list[Member]]:
        """A profile's toolkit, from its sources under its policy and presentation, less the
        tools of a clash ``left_out``.

        Raises:
            NameClash: tools of the catalogs that would share one name.
        """
        members = [
            Member(source, catalog.get(name, ()))
            for name, source in self.sources.items()
            if profile.sources is None or name in profile.sources
        ]
        policy = profile.policy
        decide: Callable[[str, ToolDefinition], Decision] = policy
        if left_out is not None:
            clashing = {pair for pairs in left_out.clashes.values() for pair in pairs}

            def leaving_out(source: str, definition: ToolDefinition) -> Decision:
                decision = policy(source, definition)  # first: its patterns are noted
                return "block" if (source, definition.name) in clashing else decision

            decide = leaving_out
        policy.reset()
        toolkit = _watched(self._present(assemble(members, decide), profile.presentation))
        fresh = [n for n in policy.unnamed if (profile.name, n) not in self._reported]
        if fresh:
            self._reported.update((profile.name, n) for n in fresh)
            names = sorted(fresh)
            _log.info("gateway.unnamed", profile=profile.name, tools=names)
            more = len(names) - MAX_UNNAMED_SHOWN
            self.output.note(
                f"{len(names)} tool{' is' if len(names) == 1 else 's are'} blocked, as no "
                f"{profile.what} pattern names them: "
                + ", ".join(names[:MAX_UNNAMED_SHOWN])
                + (
                    f", and {more} more (the log's gateway.unnamed line lists them all)"
                    if more > 0
                    else ""
                )
            )
        unmatched = [p for p in policy.unmatched() if (profile.name, p) not in self._unmatched]
        if unmatched:
            self._unmatched.update((profile.name, p) for p in unmatched)
            # A source not discovered has no tools yet: a pattern may be meant for its tools.
            undiscovered = [m.source.name for m in members if m.source.name not in catalog]
            _log.warning(
                "gateway.pattern_unmatched",
                profile=profile.name,
                patterns=unmatched,
                **({"undiscovered": undiscovered} if undiscovered else {}),
            )
            self.output.note(
                f"{profile.what} patterns that match no tool: "
                + ", ".join(unmatched)
                + (f" (not discovered yet: {', '.join(undiscovered)})" if undiscovered else "")
            )
        return toolkit, members

    def _clashed(self, clash: NameClash, *, refresh: bool) -> None:
        """Log a clash of names, and tell the operator (once for each set of names)."""
        shown = [
            (name, [(s, cut(t, MAX_TOOL_NAME_SHOWN)) for s, t in pairs[:MAX_CLASHING_SHOWN]])
            for name, pairs in itertools.islice(clash.clashes.items(), MAX_CLASHES_SHOWN)
        ]
        _log.warning(
            "gateway.name_clash",
            served="previous" if refresh else "rest",
            count=len(clash.clashes),
            clashes=[
                {"name": name, "tools": [{"source": s, "tool": t} for s, t in pairs]}
                for name, pairs in shown
            ],
        )
        names = frozenset(clash.clashes)
        if names == self._clash_noted:
            return
        self._clash_noted = names
        more = len(clash.clashes) - len(shown)
        self.output.note(
            ("the tools changed, but " if refresh else "")
            + f"{len(clash.clashes)} tool name(s) clash, "
            + ("so the tools of before are served" if refresh else "so they are left out")
            + " (rename a source, or block all but one by its upstream name): "
            + "; ".join(
                f"{name} <- " + ", ".join(f"{s}/{t!r}" for s, t in pairs) for name, pairs in shown
            )
            + (f"; and {more} more" if more > 0 else "")
        )

    def _present(self, toolkit: Toolkit, presentation: Presentation) -> Toolkit:
        if presentation == "search":
            return tool_search(toolkit)
        if presentation == "code":
            assert self._sandbox is not None
            return code_mode(toolkit, self._sandbox, approval=self.config.serve.code_approval)
        return toolkit

    @staticmethod
    def _signatures(front: ToolkitServer) -> dict[str, Signature]:
        return {
            name: tuple(
                (t.name, t.description, json.dumps(t.input_schema, sort_keys=True))
                for t in toolkit.tools.values()
            )
            for name, toolkit in front.toolkits.items()
        }

    async def _tell_clients(self) -> None:
        await self._bus.publish(ToolsListChanged())
        for key, session in list(self._sessions.items()):
            with anyio.move_on_after(NOTIFY_TIMEOUT) as waited:
                try:
                    await session.send_tool_list_changed()
                    continue
                except Exception as error:  # noqa: BLE001 - a session that ended is forgotten
                    _log.debug("gateway.notify_failed", error=type(error).__name__)
            if waited.cancelled_caught:
                _log.debug("gateway.notify_failed", error="timeout")
            self._sessions.pop(key, None)

    # Calls.

    def _instrument(self, front: ToolkitServer) -> None:
        """Count and log each call, note sessions to notify, serve ``subscriptions/listen``."""
        server = front.server
        listing = server.get_request_handler("tools/list")
        calling = server.get_request_handler("tools/call")
        assert listing is not None
        assert calling is not None
        list_tools, call_tool = listing.handler, calling.handler
        sessions = self.config.serve.max_sessions

        async def listed(ctx: ServerRequestContext[Any], params: Any) -> Any:
            request = ctx.request
            if request is not None:
                caller = caller_of(cast("Request", request).scope)
                if caller is not None:
                    await self._list_as(caller, _bearer(ctx, caller))
            key = None if request is None else request.headers.get("mcp-session-id")
            if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS and key:
                # As many as may be open; the oldest is forgotten past it.
                if key not in self._sessions and len(self._sessions) >= sessions:
                    self._sessions.pop(next(iter(self._sessions)))
                self._sessions[key] = ctx.session
            return await list_tools(ctx, params)

        async def called(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult | types.InputRequiredResult:
            if self._draining:
                return types.CallToolResult(
                    content=[types.TextContent(text="The gateway is stopping; call again later.")],
                    is_error=True,
                )
            record = _Call()
            token = _CALL.set(record)
            # A trace the client sent in HTTP headers, not in params._meta (which the SDK's
            # server continues itself): the call's spans join it.
            continued = _tracing.attached(_client_trace(ctx))
            self._in_flight += 1
            started = time.perf_counter()
            scope = {} if ctx.request is None else cast("Request", ctx.request).scope
            caller = caller_of(scope)
            # A profile's name is the operator's (a metric's label names no caller).
            profile = str(scope.get(SELECTED_SCOPE_KEY, ""))
            # A metric's label names a tool served to the caller, never a client's text.
            served = params.name in front.toolkits.get(profile, ())
            outcome = "cancelled"
            who = _caller(ctx)
            record.profile = profile
            if caller is not None and caller.kind != "none":
                record.caller = caller.id
            assert self.limits is not None
            try:
                async with self.limits.admitted(profile, who):
                    with calling_as(who), serving(caller, _bearer(ctx, caller)):
                        answered = await call_tool(ctx, params)
                if isinstance(answered, types.InputRequiredResult):
                    # The client is asked (2026-07-28): the call comes again with its answer.
                    outcome = ASKED
                    return answered
                result = cast("types.CallToolResult", answered)
                if result.is_error and record.code is None:
                    # Not the source's failure nor a refused approval: the toolkit refused the
                    # input before any source saw it.
                    record.code = "InvalidInputError"
                outcome = record.code or "ok"
                return result
            except LimitExceeded as limited:
                outcome = LIMITED
                return types.CallToolResult(
                    content=[types.TextContent(text=limited.model_message)], is_error=True
                )
            except MCPError:
                # The front's one protocol error of a call: a name it does not serve (or blocks).
                outcome = "NotFoundError"
                raise
            except Exception:
                outcome = "UnknownError"
                raise
            finally:
                seconds = time.perf_counter() - started
                trace_id = _tracing.trace_id()
                _tracing.detached(continued)
                _CALL.reset(token)
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.set()
                    self._idle = anyio.Event()
                self.metrics.record(
                    params.name if served else None,
                    None if outcome in ("ok", ASKED) else outcome,
                    seconds,
                    profile=profile,
                )
                # One line per call, without its input or its answer (they may be secrets);
                # an unknown name is cut, as every text field of a log line is.
                _log.info(
                    "gateway.call",
                    tool=params.name,
                    profile=profile,
                    decision=_decision(outcome, record),
                    outcome=outcome,
                    ms=round(seconds * 1000, 2),
                    era="session"
                    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
                    else "stateless",
                    trace_id=trace_id,
                    **_audited(caller),
                )

        server.add_request_handler("tools/list", listing.params_type, listed)
        server.add_request_handler("tools/call", types.CallToolRequestParams, called)
        server.add_request_handler(
            "subscriptions/listen",
            types.SubscriptionsListenRequestParams,
            ListenHandler(self._bus),
        )

    async def _approve(self, name: str, input: JsonObject) -> bool:
        """Ask for a call's approval as its profile's ``approval`` says (see
        ``cli/_approvals.py``); the call's record learns who approved it, or why not.

        Raises:
            ApprovalRequired: nobody could be asked.
            ApprovalTimedOut: nobody decided in time.
        """
        record = _CALL.get() or _Call()
        rule = self.approval.rule(record.profile)
        try:
            if rule.by != "approvers" and client_can_be_asked():
                approved, by = await ask_client(name, input), "client"
            elif rule.by == "caller":
                raise ApprovalRequired("by = caller, and the client declared no elicitation")
            elif not self.approval.can_ask(record.profile):
                raise ApprovalRequired(
                    f"profile {record.profile!r} has no approvers and the client cannot be "
                    "asked; there is no --approve-on-terminal"
                )
            else:
                decided = await self.approval.approvals.request(
                    name,
                    input,
                    caller=record.caller,
                    profile=record.profile,
                    source=self._source_of(record.profile, name),
                    deadline=time.time() + rule.timeout,
                )
                approved, by = decided.approved is True, decided.decided_by or "approver"
        except NoApproval as undecided:
            _note_code(undecided.code)
            raise
        return _approved(approved, by=by)

    def _source_of(self, profile: str, name: str) -> str | None:
        """The source a tool of ``profile`` reaches, if it reaches one."""
        assert self.front is not None
        toolkit = self.front.toolkits.get(profile)
        try:
            return None if toolkit is None else toolkit.source_tool(name)[0]
        except KeyError:
            return None  # a tool of a presentation (code mode's execute): no one source

    # HTTP.

    def _app(
        self,
        front: ToolkitServer,
        authenticator: Authenticator,
        metrics_key: Authenticator | None,
    ) -> Starlette:
        serve = self.config.serve
        # The operator's routes are added to the front's app, behind its Host and Origin check.
        app = front.streamable_http_app(
            path=serve.path,
            host=serve.host,
            transport_security=_transport_security(serve),
            max_sessions=serve.max_sessions,
            session_idle_timeout=serve.session_idle_timeout,
            authenticator=authenticator,
        )

        async def healthz(request: Request) -> Response:
            why = self._unready()
            body: dict[str, object] = {"ready": why is None}
            if why is not None:
                body["why"] = why
            body["sources"] = {
                name: _health(self.failed[name]) if name in self.failed else "ok"
                for name in self.sources
            }
            body["tools"] = self._tools
            return JSONResponse(body, status_code=200 if why is None else 503)

        async def metrics(request: Request) -> Response:
            if metrics_key is not None:
                try:
                    await metrics_key.authenticate(request)
                except Refused as refused:
                    return refused.response()
            return Response(
                self.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8"
            )

        app.router.routes.extend(
            [
                Route("/healthz", healthz),
                Route("/metrics", metrics),
                *self.approval.routes(authenticator),
            ]
        )
        for connector in self.connectors:
            app.router.routes.extend(connector.routes(authenticator))
        return app

    def _unready(self) -> str | None:
        """Why ``/healthz`` answers 503, or ``None`` when the gateway is ready: every source was
        tried, and none failed its last discovery or some source has tools to serve (a source
        down after a discovery keeps its tools: its calls fail until it is back, the rest
        answer). A gateway whose every source failed serves nothing: a balancer should send
        agents elsewhere."""
        if not self.discovered >= set(self.sources):
            return "discovering the sources"
        if self.failed and not any(self.catalog.values()):
            return f"no source has tools to serve: {len(self.failed)} of {len(self.sources)} failed"
        return None


class _Audited:
    """An authenticator whose every refusal is logged, one ``gateway.refused`` line each: its
    reason, status and the kind of authentication, never a credential nor an address."""

    def __init__(self, authenticator: Authenticator, kind: str) -> None:
        self._authenticator = authenticator
        self._kind = kind

    async def authenticate(self, request: Request) -> Caller:
        try:
            return await self._authenticator.authenticate(request)
        except Refused as refused:
            _log.info(
                "gateway.refused", reason=refused.reason, status=refused.status, kind=self._kind
            )
            raise

    def routes(self) -> Sequence[BaseRoute]:
        return self._authenticator.routes()


_HOST_REFUSALS = (
    ("Invalid Host header", "foreign_host", 421),
    ("Missing Host header", "no_host", 421),
    ("Invalid Origin header", "foreign_origin", 403),
)


def _host_refused(record: logging.LogRecord) -> bool:
    """A filter of the SDK's Host and Origin check's log, which writes the refused header's
    value (a caller's text, of any length) in a warning: each refusal is logged instead as a
    ``gateway.refused`` line that names no value."""
    message = record.getMessage()
    for prefix, reason, status in _HOST_REFUSALS:
        if message.startswith(prefix):
            _log.info("gateway.refused", reason=reason, status=status, kind="host_check")
            return False
    return True


def _audited(caller: Caller | None) -> dict[str, str]:
    """A call's log fields of its caller: its kind, and its name (a key's name, a token's
    ``sub``, cut) and client, unless it is an address (``type = "none"``)."""
    if caller is None:
        return {}
    fields = {"kind": caller.kind}
    if caller.kind != "none":
        fields["caller"] = cut(caller.name, MAX_CALLER_SHOWN)
    if caller.client_id is not None:
        fields["client"] = cut(caller.client_id, MAX_CALLER_SHOWN)
    return fields


def _transport_security(serve: ServeConfig) -> TransportSecuritySettings:
    """The Host and Origin check, on whatever the host: the host's own name (unless it is
    every address, ``0.0.0.0`` or ``::``), loopback's, and ``allowed_hosts`` and
    ``allowed_origins``. A name is let in with any port and without one (a proxy on the
    scheme's port sends none)."""
    names = [*_LOOPBACK_HOSTS]
    own = f"[{serve.host}]" if ":" in serve.host else serve.host
    if serve.host not in ("0.0.0.0", "::") and own not in names:
        names.append(own)
    hosts = [form for name in names for form in (name, f"{name}:*")]
    for host in serve.allowed_hosts:
        hosts.extend((host, f"{host}:*") if ":" not in host.rsplit("]", 1)[-1] else (host,))
    origins = [f"{scheme}://{name}{port}" for name in names for scheme in ("http", "https")
               for port in ("", ":*")]  # fmt: skip
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[*origins, *serve.allowed_origins],
    )


def _caller(ctx: ServerRequestContext[Any]) -> str | None:
    """Who makes a request, for each source's share of calls per caller: the caller the front's
    authenticator established; without one, or for ``type = "none"`` (where every client on
    this machine has one address), a session's client by its ``Mcp-Session-Id`` (the SDK
    answers 404 to one it did not give out), any other client by its address (every stateless
    client behind one proxy has the proxy's address, and so shares one share)."""
    request = cast("Request | None", ctx.request)
    if request is None:
        return None
    caller = caller_of(request.scope)
    if caller is not None and caller.kind != "none":
        return caller.id
    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        session = request.headers.get("mcp-session-id")
        if session:
            return "session " + session
    return None if request.client is None else "address " + request.client.host


def _client_trace(ctx: ServerRequestContext[Any]) -> Context | None:
    """The trace context of a call's HTTP request, when its ``params._meta`` has none."""
    if ctx.meta is not None and ctx.meta.get("traceparent") is not None:
        return None
    request = ctx.request
    return None if request is None else _tracing.extracted(cast("Request", request).headers)


def _bearer(ctx: ServerRequestContext[Any], caller: Caller | None) -> str | None:
    """The token an OAuth caller presented (verified by the authenticator): what a per-caller
    source's token exchange exchanges. Never sent upstream itself."""
    request = cast("Request | None", ctx.request)
    if caller is None or caller.kind != "oauth" or request is None:
        return None
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _health(error: ToolSourceError) -> str:
    """What ``/healthz`` says of a source that failed: its reason and the reason's own words.

    Never the error's message, which may name an address, a URL's path or a command: that is
    in the log, ``gateway.discover_failed``, for the operator.
    """
    return (
        f"failed: {error.reason}: {error.default_message} See gateway.discover_failed in the log."
    )


def _watched(toolkit: Toolkit) -> Toolkit:
    """The toolkit, each tool's handler noting the code of the failure it raised."""

    def watch(entry: ToolEntry) -> ToolEntry:
        handler = entry.handler

        async def noted(input: JsonObject) -> JsonValue:
            try:
                return await handler(input)
            except ToolSourceError as error:
                _note_code(error.reason)
                raise
            except Failure as failure:
                _note_code(failure.code)
                raise

        return ToolEntry(tool=entry.tool, handler=noted, route=entry.route)

    return Toolkit.from_entries(watch(entry) for entry in toolkit.entries())


def _listen(host: str, port: int) -> socket.socket:
    """The gateway's listening socket, bound here so that a taken port is a plain OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP said outright: asyncio sets TCP_NODELAY only on sockets that say it, and
    # without it Nagle's algorithm and delayed ACKs hold each answer back some 40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port} ({error.strerror})") from None
    sock.listen(4096)
    sock.set_inheritable(True)
    return sock


def _decision(outcome: str, record: _Call) -> str:
    """What the audit line says was decided of a call: ``allowed``, ``approved by <whom>``,
    ``denied`` (a person did not approve it), ``unapproved`` (nobody could be asked, or nobody
    decided in time), ``asked`` (its client asks its person, in 2026-07-28, and sends the call
    again), ``blocked`` (no tool of that name is
    served to the caller: blocked by its policy, outside its profile, or unknown), or
    ``refused_limits`` (its profile's limits); how it then went is its outcome."""
    if outcome in (LIMITED, ASKED):
        return outcome
    if outcome == "NotFoundError" and record.code is None:
        return "blocked"
    if record.code == "ApprovalDenied":
        return "denied"
    if record.code in ("ApprovalRequired", "ApprovalTimedOut"):
        return "unapproved"
    if record.approved_by is not None:
        return f"approved by {record.approved_by}"
    return "allowed"


def _approved(answer: bool, *, by: str) -> bool:
    """A person's decision, noted for the call's audit line: approved ``by`` whom, or denied."""
    if not answer:
        _note_code("ApprovalDenied")
    else:
        record = _CALL.get()
        if record is not None:
            record.approved_by = by
    return answer


def _note_code(code: str) -> None:
    record = _CALL.get()
    if record is not None and record.code is None:
        record.code = code
