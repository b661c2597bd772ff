"""Connections shared by many tenants: one pool, each tenant's credentials on a thin client.

A host with many tenants (workspaces, callers), each with its own credentials, gives each its own
client; a client of its own, with its own pool and TLS context, costs most of a megabyte and tens
of milliseconds. :class:`Connections` holds one transport (one pool) for every tenant and gives
each tenant a thin client over it: the tenant's headers, query parameters and ``auth`` on the
client, so what authorizes a request is the host's, per tenant, and a source's redaction reads
them from the client as it reads any client's; its own cookie jar, so nothing a server sets for
one tenant reaches another. Each tenant's client may hold at most ``max_per_tenant`` connections to
one upstream origin (scheme, host and port) at once: its next request waits, in turn, for one of
its own to end (as a request waits for a connection of the pool, within the client's pool
timeout), so one tenant's flood cannot take the connections every tenant shares.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar, overload

import anyio
import httpx

from amends_toolkit._options import check_counts
from amends_toolkit.protocols.http import libraries
from amends_toolkit.runtime._mailbox import Shares
from amends_toolkit.runtime._messages import waiters

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from types import ModuleType, TracebackType

    import httpx2

__all__ = ("MAX_CONNECTIONS", "MAX_PER_TENANT", "Connections")

MAX_CONNECTIONS: Final = 1024
"""Connections the pool :class:`Connections` builds holds at once, to every upstream together."""

MAX_PER_TENANT: Final = 128
"""Connections one tenant's client may hold to one upstream origin at once: room for two sources
of it at ``Runtime.spawn``'s default ``max_concurrency`` (64)."""

C = TypeVar("C", "httpx.AsyncClient", "httpx2.AsyncClient")


class Connections(Generic[C]):
    """One pool of connections for many tenants, and a thin client for each.

    Build it once, over a transport of ``httpx`` (the default: an ``httpx.AsyncHTTPTransport``
    with ``max_connections``) or of ``httpx2`` (give one: ``httpx2.AsyncHTTPTransport(...)``,
    with its proxy, TLS and limits), and ask it for each tenant's client::

        async with at.http.Connections() as connections:
            client = connections.client(headers={"Authorization": f"Bearer {token}"})
            source = at.http.make(name="crm", base_url=URL, operations=ops, client=client)

    Leaving the block (or :meth:`aclose`) closes the pool, and every tenant's client with it.

    Args:
        transport: The pool every tenant's client sends over; the thin clients are of its
            library. Proxies, TLS and HTTP/2 are its own: a thin client reads no proxy from the
            environment. ``None``: an ``httpx.AsyncHTTPTransport`` of ``max_connections``.
        max_connections: Connections of the pool built when no ``transport`` is given (default
            :data:`MAX_CONNECTIONS`); give a transport's own limits to the transport.
        max_per_tenant: Connections one tenant's client may hold to one upstream origin at
            once (default :data:`MAX_PER_TENANT`); its next request to that origin waits for
            one of its own to end, within the client's pool timeout (``PoolTimeout`` past it,
            which a source answers as ``UnavailableError``). Below ``max_connections``, so
            one tenant leaves connections to the others. Set it above the calls a tenant's
            sources run at once (their ``max_concurrency``, plus one for an MCP source that
            listens), or its calls wait for its share rather than run.

    Raises:
        ValueError: a limit that is not a positive whole number, ``max_per_tenant`` not below
            ``max_connections``, or ``max_connections`` given with a ``transport``.
        TypeError: a transport of neither ``httpx`` nor ``httpx2``.
    """

    @overload
    def __init__(
        self: Connections[httpx.AsyncClient],
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        max_connections: int | None = None,
        max_per_tenant: int = MAX_PER_TENANT,
    ) -> None: ...

    @overload
    def __init__(
        self: Connections[httpx2.AsyncClient],
        transport: httpx2.AsyncBaseTransport,
        *,
        max_connections: int | None = None,
        max_per_tenant: int = MAX_PER_TENANT,
    ) -> None: ...

    def __init__(
        self,
        transport: object = None,
        *,
        max_connections: int | None = None,
        max_per_tenant: int = MAX_PER_TENANT,
    ) -> None:
        check_counts(max_per_tenant=max_per_tenant)
        if transport is None:
            pool = MAX_CONNECTIONS if max_connections is None else max_connections
            check_counts(max_connections=pool)
            if max_per_tenant >= pool:
                raise ValueError(
                    f"max_per_tenant ({max_per_tenant}) must be below max_connections ({pool}), "
                    "so that one tenant leaves connections to the others"
                )
            self._library: ModuleType = httpx
            transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
            )
        else:
            if max_connections is not None:
                raise ValueError(
                    "max_connections sizes the pool Connections builds; give the transport "
                    "its own limits instead (httpx.AsyncHTTPTransport(limits=...))"
                )
            self._library = _library_of(transport)
        self._transport: Any = transport
        self._tenant = _tenant_transport(self._library)
        self._max_per_tenant = max_per_tenant

    async def __aenter__(self) -> Connections[C]:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool: every connection, every tenant's client with it."""
        await self._transport.aclose()

    def client(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        auth: object = None,
    ) -> C:
        """A tenant's client over the shared pool, with the tenant's credentials.

        Building it contacts nothing and costs a few kilobytes; closing it leaves the pool
        open. A source given it sends every request with these headers and query parameters
        (they win over any an input fills) and ``auth``, and its redaction knows them (``auth``'s
        too, read from each request it sends), so they never reach the model.
        Its timeouts are its library's defaults (set ``client.timeout`` to change them).

        Args:
            headers: The tenant's headers (its ``Authorization``, its API key).
            params: The tenant's query parameters (a key some APIs take in the query).
            auth: The tenant's ``auth``, as its library takes it: an ``httpx.Auth`` (an
                ``httpx2.Auth`` over httpx2) such as an OAuth provider, a ``(user, password)``
                pair, or a function of the request.
        """
        client: C = self._library.AsyncClient(
            transport=self._tenant(self._transport, self._max_per_tenant),
            headers=headers,
            params=params,
            auth=auth,
        )
        return client


def _library_of(transport: object) -> ModuleType:
    for library in libraries():
        if isinstance(transport, library.AsyncBaseTransport):
            return library
    raise TypeError(
        "transport must be an httpx or httpx2 AsyncBaseTransport (such as "
        f"httpx.AsyncHTTPTransport()), not {type(transport).__name__}"
    )


_TENANT_TRANSPORTS: dict[str, Callable[[Any, int], Any]] = {}


def _tenant_transport(library: ModuleType) -> Callable[[Any, int], Any]:
    """The class of a tenant's transport for ``library`` (its stream and its transport must be
    of the library's own base classes), made once per library."""
    made = _TENANT_TRANSPORTS.get(library.__name__)
    if made is not None:
        return made

    class Held(library.AsyncByteStream):  # type: ignore[name-defined,misc]
        """A response's body that gives its tenant's share back once closed."""

        def __init__(self, stream: Any, give_back: Callable[[], None]) -> None:
            self._stream = stream
            self._give_back: Callable[[], None] | None = give_back

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for part in self._stream:
                yield part

        async def aclose(self) -> None:
            try:
                await self._stream.aclose()
            finally:
                give_back, self._give_back = self._give_back, None
                if give_back is not None:
                    give_back()

    class Tenant(library.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """One tenant's way to the shared pool: at most its share of connections per origin."""

        def __init__(self, pool: Any, count: int) -> None:
            self._pool = pool
            self._count = count
            self._shares: Shares | None = None  # made in the loop, at the first request

        async def handle_async_request(self, request: Any) -> Any:
            shares = self._shares
            if shares is None:
                shares = self._shares = Shares(self._count, waiters())
            url = request.url
            origin = f"{url.scheme}://{url.host}:{url.port}"
            if not shares.take_now(origin):
                wait = request.extensions.get("timeout", {}).get("pool")
                with anyio.move_on_after(math.inf if wait is None else wait) as waited:
                    await shares.take(origin)
                if waited.cancelled_caught:
                    raise library.PoolTimeout(
                        "no connection of the tenant's share came free in time", request=request
                    )
            try:
                response = await self._pool.handle_async_request(request)
            except BaseException:
                shares.give_back(origin)
                raise
            response.stream = Held(response.stream, lambda: shares.give_back(origin))
            return response

        async def aclose(self) -> None:
            """The pool is every tenant's: closing one tenant's client leaves it open."""

    _TENANT_TRANSPORTS[library.__name__] = Tenant
    return Tenant
