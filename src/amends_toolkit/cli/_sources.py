"""Sources from configuration: the host side of ``at.mcp.http``, ``at.mcp.stdio`` and OpenAPI.

The gateway builds its remote sources over one pool of connections (``at.http.Connections``),
each source over a thin client of its own, built once, with that source's headers (read from the
environment) and, for ``auth = "oauth"``, the SDK's OAuth provider as its auth: the credentials
are the client's, never the source's, and each source may hold at most :data:`MAX_PER_SOURCE` of
the pool's connections to its upstream, so a slow upstream leaves connections to the others. A
per-caller source has one connection pool and a client per caller over it, carrying that
caller's credentials (``cli/_per_caller.py``).

A pool is a transport, and a client over a transport reads no proxy from the environment: so
when the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, with
``NO_PROXY``), each remote source has a client of its own instead, which honours them as httpx
does (:func:`proxied`).
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import httpx2

from amends_toolkit import http, mcp, openapi
from amends_toolkit._errors import ConnectionRequired
from amends_toolkit.cli._config import (
    COMMAND_LINE_BASE_URL,
    ConfigError,
    SourceConfig,
    caller_secret,
    expand_header,
)
from amends_toolkit.cli._per_caller import PerCallerSource, SharedTransport, tenant_client

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from contextlib import AsyncExitStack

    from anyio.abc import TaskGroup

    from amends_toolkit.cli._connect import Connector
    from amends_toolkit.cli._credentials import CredentialStore
    from amends_toolkit.openapi import Skipped
    from amends_toolkit.runtime import Runtime, ToolSource

__all__ = ("Built", "build_per_caller", "build_source", "open_connections", "source_from_argument")

MAX_CONNECTIONS = 1024
"""Connections a source's client may hold at once: a gateway runs many calls concurrently (a
per-caller source's callers share one pool of as many)."""
_LIMITS = httpx2.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)

MAX_PER_SOURCE = 256
"""Connections one source may hold to its upstream at once: above the calls its actor runs at
once (``Runtime.spawn``'s ``max_concurrency``), and a quarter of the pool."""


async def open_connections(stack: AsyncExitStack) -> http.Connections[httpx2.AsyncClient]:
    """The pool the sources send over, closed when ``stack`` closes."""
    return await stack.enter_async_context(
        http.Connections(httpx2.AsyncHTTPTransport(limits=_LIMITS), max_per_tenant=MAX_PER_SOURCE)
    )


def proxied() -> bool:
    """Whether the environment names a proxy for the sources' requests (read as the standard
    library reads ``*_PROXY``: upper or lower case)."""
    return not {"http", "https", "all"}.isdisjoint(urllib.request.getproxies())


class Built:
    """A source and what the operator should know of it (the operations an OpenAPI skipped),
    and, for a per-caller OAuth source, its ``/connect`` routes."""

    def __init__(
        self,
        source: ToolSource,
        skipped: tuple[Skipped, ...] = (),
        connector: Connector | None = None,
    ) -> None:
        self.source = source
        self.skipped = skipped
        self.connector = connector


class _Timed(TypedDict, total=False):
    """A source's ``timeout`` when its table gives one; else the source's own default."""

    timeout: float


async def build_source(
    config: SourceConfig,
    stack: AsyncExitStack,
    *,
    connections: http.Connections[httpx2.AsyncClient] | None = None,
    on_list_changed: Callable[[], None] | None = None,
) -> Built:
    """The source of one ``[[sources]]`` table, over ``connections`` (the sources' pool, else
    one of its own, closed when ``stack`` closes).

    Raises:
        ConfigError: a header's variable is not set, or the OpenAPI document cannot be read.
    """
    timed: _Timed = {} if config.timeout is None else {"timeout": config.timeout}
    if config.kind == "stdio":
        env = None
        if config.env is not None:
            env = {key: _expand_env(config, value) for key, value in config.env.items()}
        return Built(
            mcp.stdio(
                name=config.name,
                command=config.target,
                args=config.args,
                env=env,
                cwd=config.cwd,
                **timed,
                on_list_changed=on_list_changed,
            )
        )
    headers = _headers(config)
    auth = None
    if config.auth == "oauth":
        from amends_toolkit.cli._oauth import FileTokenStorage, loopback_handlers, oauth_provider

        assert config.token_file is not None  # checked when the configuration was read
        redirect, callback = loopback_handlers(config.redirect_uri)
        auth = oauth_provider(
            server_url=config.target,
            storage=FileTokenStorage(config.token_file),
            redirect_uri=config.redirect_uri,
            redirect_handler=redirect,
            callback_handler=callback,
        )
    if proxied():
        limits = httpx2.Limits(
            max_connections=MAX_PER_SOURCE, max_keepalive_connections=MAX_PER_SOURCE
        )
        client = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, auth=auth, limits=limits)
        )
    else:
        if connections is None:
            connections = await open_connections(stack)
        client = connections.client(headers=headers, auth=auth)
    make, skipped = _remote(config, on_list_changed=on_list_changed)
    return Built(make(client), skipped=skipped)


async def build_per_caller(
    config: SourceConfig,
    stack: AsyncExitStack,
    *,
    runtime: Runtime,
    store: CredentialStore,
    tasks: TaskGroup,
    max_callers: int,
    spawn: Mapping[str, object],
    base_url: Callable[[], str],
    refresh_before: float,
    connect_timeout: float,
    on_list_changed: Callable[[], None] | None = None,
) -> Built:
    """The source of a ``credentials = "per-caller"`` table: a :class:`PerCallerSource` whose
    callers' clients share one connection pool, closed when ``stack`` closes. ``base_url`` is
    the gateway's address as callers reach it (for ``auth = "oauth"``'s ``/connect``).

    Raises:
        ConfigError: a header's variable is not set, or the OpenAPI document cannot be read.
    """
    shared = _headers(config)  # ${VAR} headers: the operator's, the same for every caller
    secret_headers = {
        header: found
        for header, template in config.headers.items()
        if (found := caller_secret(template)) is not None
    }
    transport = httpx2.AsyncHTTPTransport(limits=_LIMITS)
    stack.push_async_callback(transport.aclose)
    pool = SharedTransport(transport)
    make, skipped = _remote(config, on_list_changed=on_list_changed)

    def missing(names: list[str]) -> ConnectionRequired:
        return ConnectionRequired(
            source=config.name,
            message=(
                f"This caller has no {' and no '.join(repr(n) for n in names)} of its own for "
                f"the source {config.name!r}: ask the gateway's operator to set it "
                "(amends-toolkit credentials set)."
            ),
        )

    connector = None
    if config.auth == "oauth":
        from amends_toolkit.cli._connect import Connector

        connector = Connector(
            source=config.name,
            server_url=config.target,
            store=store,
            pool=pool,
            headers=shared,
            base_url=base_url,
            tasks=tasks,
            refresh_before=refresh_before,
            connect_timeout=connect_timeout,
            on_connected=on_list_changed,
        )

    async def build(
        caller: str, values: Mapping[str, str]
    ) -> tuple[ToolSource, httpx2.AsyncClient]:
        if connector is not None and not connector.connected(values):
            raise not_connected(caller)
        absent = [name for _, name in secret_headers.values() if name not in values]
        if absent:
            raise missing(sorted(set(absent)))
        headers = dict(shared)
        for header, (scheme, name) in secret_headers.items():
            headers[header] = scheme + values[name]
        if connector is None:
            client = tenant_client(pool, headers)
        else:
            client = connector.client(caller, headers)
        return make(client), client

    names = sorted({name for _, name in secret_headers.values()})

    async def stored(caller: str, bearer: str | None) -> Mapping[str, str]:
        return await store.values(caller, config.name)

    values_of: Callable[[str, str | None], Awaitable[Mapping[str, str]]] = stored

    if config.exchange is not None:
        from amends_toolkit.cli._exchange import EXCHANGED, Exchanger

        exchange = config.exchange
        try:
            secret = expand_header(exchange.client_secret)
        except KeyError as unset:
            raise ConfigError(
                f"source {config.name!r}: exchange's client_secret needs the environment "
                f"variable {unset.args[0]}, which is not set"
            ) from None
        # The exchanges' own client, without the callers' credentials.
        exchanges = await stack.enter_async_context(httpx2.AsyncClient(limits=_LIMITS))
        exchanger = Exchanger(
            source=config.name,
            token_url=exchange.token_url,
            audience=exchange.audience,
            client_id=exchange.client_id,
            client_secret=secret,
            client=exchanges,
            refresh_before=refresh_before,
            max_cached=max_callers,
        )
        values_of = exchanger.values
        secret_headers["Authorization"] = ("Bearer ", EXCHANGED)
        names = [EXCHANGED]

    def not_connected(caller: str) -> ConnectionRequired:
        if connector is not None:
            return ConnectionRequired(source=config.name, message=connector.connect_message())
        if config.exchange is not None:
            return ConnectionRequired(
                source=config.name,
                message="This source needs the token this caller signed in to the gateway with.",
            )
        return missing(names)

    return Built(
        PerCallerSource(
            name=config.name,
            runtime=runtime,
            values=values_of,
            store=store,
            build=build,
            tasks=tasks,
            max_callers=max_callers,
            spawn=spawn,
            not_connected=not_connected,
            # OAuth tokens change as they are refreshed: only a secret's change (or a value
            # set or forgotten) makes a caller's actor anew.
            watched=frozenset(names),
        ),
        skipped=skipped,
        connector=connector,
    )


def _headers(config: SourceConfig) -> dict[str, str]:
    """The source's ``${VAR}`` headers, from the environment (``${caller:NAME}`` ones are each
    caller's: see :func:`build_per_caller`).

    Raises:
        ConfigError: a header's variable is not set.
    """
    headers: dict[str, str] = {}
    for header, template in config.headers.items():
        if caller_secret(template) is not None:
            continue
        try:
            headers[header] = expand_header(template)
        except KeyError as missing:
            raise ConfigError(
                f"source {config.name!r}: header {header!r} needs the environment variable "
                f"{missing.args[0]}, which is not set"
            ) from None
    return headers


def _remote(
    config: SourceConfig, *, on_list_changed: Callable[[], None] | None
) -> tuple[Callable[[httpx2.AsyncClient], ToolSource], tuple[Skipped, ...]]:
    """How the source of an mcp or openapi table is made over a client (its OpenAPI document
    read once, here), and the operations it skipped.

    Raises:
        ConfigError: the OpenAPI document cannot be read.
    """
    timed: _Timed = {} if config.timeout is None else {"timeout": config.timeout}
    if config.kind == "mcp":
        return lambda client: mcp.http(
            name=config.name,
            url=config.target,
            client=client,
            **timed,
            on_list_changed=on_list_changed,
        ), ()
    try:
        document = openapi.read_document(config.target)
        read = openapi.read_operations(document)
    except OSError as error:
        raise ConfigError(
            f"source {config.name!r}: cannot read {config.target} ({error.strerror})"
        ) from None
    except openapi.DocumentError as error:
        raise ConfigError(f"source {config.name!r}: {config.target}: {error}") from None
    assert config.base_url is not None  # checked when the configuration was read
    base_url = config.base_url

    return lambda client: http.make(
        name=config.name,
        base_url=base_url,
        operations=read.operations,
        client=client,
        propagate_trace=config.propagate_trace,
        **timed,
    ), read.skipped


def _expand_env(config: SourceConfig, value: str) -> str:
    if value.startswith("${") and value.endswith("}"):
        var = value[2:-1]
        if var not in os.environ:
            raise ConfigError(
                f"source {config.name!r}: env needs the environment variable {var}, which is not set"
            )
        return os.environ[var]
    return value


def source_from_argument(
    target: list[str], *, name: str, headers: dict[str, str], base_url: str | None
) -> SourceConfig:
    """A source named on the command line: an MCP URL, an OpenAPI file, or ``-- command ...``.

    ``headers`` maps a header to its template (``${VAR}``), as in the configuration.

    Raises:
        ConfigError: the argument is none of these.
    """
    if not target:
        raise ConfigError("name a source: an MCP URL, an OpenAPI file, or -- a stdio command")
    first = target[0]
    if len(target) > 1 or first == "--":
        command = target[1:] if first == "--" else target
        if not command:
            raise ConfigError("give the stdio server's command after --")
        return SourceConfig(name=name, kind="stdio", target=command[0], args=tuple(command[1:]))
    if first.startswith(("http://", "https://")):
        return SourceConfig(name=name, kind="mcp", target=first, headers=headers)
    if Path(first).is_file():
        return SourceConfig(
            name=name,
            kind="openapi",
            target=first,
            base_url=base_url or COMMAND_LINE_BASE_URL,
            headers=headers,
        )
    raise ConfigError(
        f"{first!r} is no http(s) URL and no file; for a stdio server write: -- COMMAND ARGS..."
    )
