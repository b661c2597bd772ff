"""Per-caller OAuth: each caller connects its own account to a source (``auth = "oauth"`` with
``credentials = "per-caller"``), through the SDK's OAuth provider.

``GET /connect/{source}``, by a caller signed in to the gateway (its key or its token, as
``[auth]`` says), starts the SDK's flow for that caller: the provider finds the upstream's
authorization server (its protected resource metadata), registers the gateway as a client (or
uses the registration it stored for the caller), and the caller is redirected (302) to the
authorization address, with PKCE and a state. The authorization server redirects the browser to
``GET /connect/{source}/callback`` on the gateway: the state names the flow (it is single-use,
unguessable, and bound to the caller who began it), the provider exchanges the code, and the
caller's tokens are kept in the credential store, sealed (:class:`StoredTokens`). From then on
that caller's actor sends its own access token, and the provider refreshes it with its refresh
token once it is within ``refresh_before`` seconds of its expiry (``[credentials]``).
``DELETE /connect/{source}`` forgets the caller's tokens.

A flow waits ``connect_timeout`` seconds at most for its callback; at most
``MAX_PENDING_CONNECTS`` wait at once (past it: 503).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import ValidationError
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from amends_toolkit._errors import ConnectionRequired
from amends_toolkit._log import get_logger
from amends_toolkit.adapters import Refused
from amends_toolkit.cli._oauth import client_metadata
from amends_toolkit.cli._per_caller import tenant_client

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    import httpx2
    from anyio.abc import TaskGroup
    from starlette.requests import Request

    from amends_toolkit.adapters import Authenticator
    from amends_toolkit.cli._credentials import CredentialStore
    from amends_toolkit.cli._per_caller import SharedTransport

__all__ = (
    "CLIENT",
    "CONNECT_TIMEOUT",
    "MAX_PENDING_CONNECTS",
    "REFRESH_BEFORE",
    "TOKENS",
    "Connector",
    "StoredTokens",
    "caller_provider",
)

_log = get_logger("amends_toolkit.gateway")

TOKENS: Final = "oauth_tokens"
"""The name under which a caller's OAuth tokens (JSON, with their expiry) are stored."""
CLIENT: Final = "oauth_client"
"""The name under which the gateway's client registration for a caller is stored."""
SERVER: Final = "oauth_server"
"""The name under which the authorization server's metadata (its token endpoint) is stored: a
provider that loads stored tokens refreshes them there, never at the upstream's origin (the
SDK's guess without metadata, which would send the client's secret to the upstream)."""
CONNECT_TIMEOUT: Final = 600.0
"""Seconds a connect flow waits for its callback (a person signs in and consents)."""
MAX_PENDING_CONNECTS: Final = 256
"""Connect flows waiting for their callback at once; past it ``GET /connect`` answers 503."""
REFRESH_BEFORE: Final = 60.0
"""Seconds before a stored access token's expiry when the provider refreshes it."""
_NO_FLOW: Final = "http://127.0.0.1/"


class StoredTokens:
    """The SDK's ``TokenStorage`` over the credential store: one caller's tokens and client
    registration for one source, sealed. An access token's expiry is kept as an absolute time,
    so a token read back (by another actor, another replica, after a restart) says how long it
    has left."""

    def __init__(self, store: CredentialStore, caller: str, source: str) -> None:
        self._store = store
        self._caller = caller
        self._source = source

    async def _value(self, name: str) -> object:
        value = (await self._store.values(self._caller, self._source)).get(name)
        try:
            return None if value is None else json.loads(value)
        except ValueError:
            return None

    async def get_tokens(self) -> OAuthToken | None:
        held = await self._value(TOKENS)
        if not isinstance(held, dict) or not isinstance(held.get("token"), dict):
            return None
        try:
            token = OAuthToken.model_validate(held["token"])
        except ValidationError:
            return None
        expires_at = held.get("expires_at")
        if isinstance(expires_at, int | float):
            token.expires_in = max(0, int(expires_at - time.time()))
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + tokens.expires_in
        held = {
            "token": tokens.model_dump(mode="json", exclude_none=True),
            "expires_at": expires_at,
        }
        await self._store.put(self._caller, self._source, TOKENS, json.dumps(held))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        held = await self._value(CLIENT)
        try:
            return None if held is None else OAuthClientInformationFull.model_validate(held)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        value = client_info.model_dump_json(exclude_none=True)
        await self._store.put(self._caller, self._source, CLIENT, value)

    async def get_server(self) -> OAuthMetadata | None:
        """The authorization server's metadata, as the connect flow found it."""
        held = await self._value(SERVER)
        try:
            return None if held is None else OAuthMetadata.model_validate(held)
        except ValidationError:
            return None

    async def set_server(self, metadata: OAuthMetadata) -> None:
        value = metadata.model_dump_json(exclude_none=True)
        await self._store.put(self._caller, self._source, SERVER, value)


class _Provider(OAuthClientProvider):
    """The SDK's provider, which also takes, with the tokens it loads from the store, their
    expiry (less ``refresh_before``) and the authorization server they came from: the SDK knows
    only the expiry of tokens it was given itself (and would send a stored token until the
    upstream refused it), and without the server's metadata it would refresh at the upstream's
    origin."""

    def __init__(self, *, storage: StoredTokens, refresh_before: float, **options: object) -> None:
        super().__init__(storage=storage, **options)  # type: ignore[arg-type]
        self._stored = storage
        self._refresh_before = refresh_before

    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        if tokens is None:
            return
        metadata = await self._stored.get_server()
        if metadata is None:
            # Tokens without their server's metadata cannot be refreshed anywhere safe.
            self.context.current_tokens = None
            return
        self.context.oauth_metadata = metadata
        if tokens.expires_in is not None:
            self.context.token_expiry_time = time.time() + tokens.expires_in - self._refresh_before

    async def _refresh_token(self) -> httpx2.Request:
        # Another actor or replica may have refreshed (and so rotated the refresh token)
        # since these tokens were loaded: refresh with the latest the store holds.
        stored = await self._stored.get_tokens()
        if stored is not None and stored.refresh_token:
            self.context.current_tokens = stored
        return await super()._refresh_token()

    async def remember_server(self) -> None:
        """Keep the metadata of the server the flow just used, for the callers' providers."""
        if self.context.oauth_metadata is not None:
            await self._stored.set_server(self.context.oauth_metadata)


def caller_provider(
    *,
    server_url: str,
    storage: StoredTokens,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    refresh_before: float = REFRESH_BEFORE,
) -> _Provider:
    """The SDK's OAuth provider for one caller of one source, over the credential store."""
    return _Provider(
        server_url=server_url,
        client_metadata=client_metadata("amends-toolkit gateway", redirect_uri),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        refresh_before=refresh_before,
    )


class _Flow:
    def __init__(self) -> None:
        self.url: str | None = None
        self.ready = anyio.Event()
        self.done = anyio.Event()
        self.connected = False
        self.send, self.receive = anyio.create_memory_object_stream[AuthorizationCodeResult](1)


class Connector:
    """The ``/connect`` routes of one per-caller OAuth source.

    Args:
        source: The source's name.
        server_url: The upstream MCP server's URL.
        store: Where callers' tokens are kept.
        pool: The source's shared connection pool.
        headers: The source's ``${VAR}`` headers (the operator's).
        base_url: The gateway's address as callers' browsers reach it (known once it
            listens): the callback is ``{base_url}/connect/{source}/callback``.
        tasks: Where flows run (a flow outlives the request that began it).
        refresh_before: See ``REFRESH_BEFORE``.
        connect_timeout: See ``CONNECT_TIMEOUT``.
        max_pending: See ``MAX_PENDING_CONNECTS``.
        on_connected: Called once a caller has connected (the gateway lists the source's
            tools again: at start, before anyone connected, it had none to list them with).
    """

    def __init__(
        self,
        *,
        source: str,
        server_url: str,
        store: CredentialStore,
        pool: SharedTransport,
        headers: Mapping[str, str],
        base_url: Callable[[], str],
        tasks: TaskGroup,
        refresh_before: float = REFRESH_BEFORE,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_pending: int = MAX_PENDING_CONNECTS,
        on_connected: Callable[[], None] | None = None,
    ) -> None:
        self._on_connected = on_connected
        self.source = source
        self.server_url = server_url
        self._base_url = base_url
        self._store = store
        self._pool = pool
        self._headers = dict(headers)
        self._tasks = tasks
        self._refresh_before = refresh_before
        self._timeout = connect_timeout
        self._max_pending = max_pending
        self._pending: dict[str, _Flow] = {}
        self._starting = 0

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends a caller's browser back."""
        return f"{self._base_url()}/connect/{self.source}/callback"

    def routes(self, authenticator: Authenticator) -> list[Route]:
        """``GET`` and ``DELETE /connect/{source}`` (for a caller ``authenticator`` lets in),
        and the callback."""

        async def connect(request: Request) -> Response:
            try:
                caller = await authenticator.authenticate(request)
            except Refused as refused:
                return refused.response()
            return await self._connect(request, caller.id)

        path = f"/connect/{self.source}"
        return [
            Route(path, connect, methods=["GET", "DELETE"]),
            Route(path + "/callback", self._callback, methods=["GET"]),
        ]

    def client(self, caller: str, headers: Mapping[str, str]) -> httpx2.AsyncClient:
        """A caller's client of the source (with these headers): its own tokens, refreshed; a
        caller whose tokens cannot be refreshed (a full authorization would be needed) gets
        ``ConnectionRequired``."""

        async def reconnect(url: str) -> None:
            raise ConnectionRequired(source=self.source, message=self.connect_message())

        async def never() -> AuthorizationCodeResult:
            raise ConnectionRequired(source=self.source, message=self.connect_message())

        provider = caller_provider(
            server_url=self.server_url,
            storage=StoredTokens(self._store, caller, self.source),
            # No flow runs here (it would be refused above): a caller's actor may be made
            # before the gateway listens, when its own address is not known yet.
            redirect_uri=_NO_FLOW,
            redirect_handler=reconnect,
            callback_handler=never,
            refresh_before=self._refresh_before,
        )
        return tenant_client(self._pool, headers, auth=provider)

    @staticmethod
    def connected(values: Mapping[str, str]) -> bool:
        """Whether a caller's stored values hold its tokens."""
        return TOKENS in values

    def connect_message(self) -> str:
        """What a caller that has not connected reads: where to connect."""
        address = self.redirect_uri.removesuffix("/callback")
        return (
            f"This caller has not connected its own account to the source {self.source!r} yet: "
            f"open {address} signed in to this gateway, authorize there, then call again."
        )

    async def _connect(self, request: Request, caller: str) -> Response:
        if request.method == "DELETE":
            count = await self._store.delete(caller, self.source)
            _log.info("gateway.disconnected", source=self.source, values=count)
            return Response(status_code=204)
        if len(self._pending) + self._starting >= self._max_pending:
            return PlainTextResponse("Too many connections are being made; try again soon.", 503)
        # A new grant: the tokens of before are forgotten, the client registration is kept.
        await self._store.delete(caller, self.source, TOKENS)
        flow = _Flow()
        self._starting += 1
        try:
            self._tasks.start_soon(self._run, caller, flow)
            with anyio.move_on_after(self._timeout):
                await flow.ready.wait()
        finally:
            self._starting -= 1
        if flow.url is None:
            return PlainTextResponse("The source's authorization server could not be reached.", 502)
        return RedirectResponse(flow.url, status_code=302)

    async def _run(self, caller: str, flow: _Flow) -> None:
        state: str | None = None

        async def redirect(url: str) -> None:
            nonlocal state
            state = parse_qs(urlsplit(url).query).get("state", [""])[0]
            self._pending[state] = flow
            flow.url = url
            flow.ready.set()

        async def callback() -> AuthorizationCodeResult:
            return await flow.receive.receive()

        provider = caller_provider(
            server_url=self.server_url,
            storage=StoredTokens(self._store, caller, self.source),
            redirect_uri=self.redirect_uri,
            redirect_handler=redirect,
            callback_handler=callback,
            refresh_before=self._refresh_before,
        )
        try:
            with anyio.move_on_after(self._timeout):
                async with tenant_client(self._pool, self._headers, auth=provider) as client:
                    await client.get(self.server_url)
                await provider.remember_server()
                flow.connected = True
                _log.info("gateway.connected", source=self.source)
                if self._on_connected is not None:
                    self._on_connected()
        except Exception as error:  # noqa: BLE001 - the operator reads it; the caller gets 502
            _log.warning("gateway.connect_failed", source=self.source, error=type(error).__name__)
        finally:
            if state is not None:
                self._pending.pop(state, None)
            flow.ready.set()
            flow.done.set()
            flow.send.close()
            flow.receive.close()

    async def _callback(self, request: Request) -> Response:
        query = request.query_params
        state, code, iss = query.get("state", ""), query.get("code", ""), query.get("iss")
        flow = self._pending.pop(state, None) if state else None
        if flow is None or not code:
            return PlainTextResponse("This authorization is unknown or over.", 400)
        try:
            flow.send.send_nowait(AuthorizationCodeResult(code=code, state=state, iss=iss))
        except (anyio.WouldBlock, anyio.ClosedResourceError):
            return PlainTextResponse("This authorization is unknown or over.", 400)
        with anyio.move_on_after(self._timeout):
            await flow.done.wait()
        if not flow.connected:
            return PlainTextResponse("The authorization could not be completed.", 502)
        return PlainTextResponse(f"Connected to {self.source}: you may close this page.")
