"""A source whose credentials are each caller's own (``credentials = "per-caller"``).

The gateway serves such a source as one :class:`PerCallerSource`: a tool source that, for each
call, finds the actor of the call's caller (named by :func:`serving`) and makes it on the
caller's first call, with an HTTP client that carries that caller's credentials and no one
else's. Each (caller, source) is an actor of its own; at most ``max_callers`` of them are held,
and past that the least recently served one is stopped (its caller's next call makes it again).

Before every call the caller's values are read from the credential store: a value an admin
changed, set or deleted (``amends-toolkit credentials``, in another process, or another
replica) is seen at the caller's next call, whose actor is then made anew (or refused).

The redaction of every answer is the client's (see :class:`~amends_toolkit._peer.Secrets`):
the caller's client holds the caller's secrets as its headers, so each caller's own secrets are
redacted in that caller's answers.

Seam (issue 30, tenants): :func:`tenant_client` is where a caller's client is built over the
source's one shared connection pool, and :meth:`PerCallerSource._spawn` is where its actor is
spawned; once ``runtime.spawn(..., idle_timeout=...)`` lands, idle actors passivate there and
``max_callers`` stays as the bound on those held at once.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import OrderedDict
from typing import TYPE_CHECKING

import anyio
import httpx2

from amends_toolkit._errors import ConnectionRequired

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence

    from anyio.abc import TaskGroup

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.adapters import Caller
    from amends_toolkit.cli._credentials import CredentialStore
    from amends_toolkit.runtime import ActorRef, Runtime, ToolSource

__all__ = ("PerCallerSource", "SharedTransport", "serving", "tenant_client")

_SERVING: contextvars.ContextVar[tuple[Caller, str | None] | None] = contextvars.ContextVar(
    "gateway_serving", default=None
)


@contextlib.contextmanager
def serving(caller: Caller | None, bearer: str | None = None) -> Iterator[None]:
    """Name the caller whose credentials the calls made inside the block carry, and the token
    it presented to the gateway (``bearer``: for a token exchange; never sent upstream)."""
    token = _SERVING.set(None if caller is None else (caller, bearer))
    try:
        yield
    finally:
        _SERVING.reset(token)


class SharedTransport(httpx2.AsyncBaseTransport):
    """One source's connection pool, lent to every caller's client: a client's ``aclose``
    leaves it open (the gateway closes it once, at its stop)."""

    def __init__(self, transport: httpx2.AsyncBaseTransport) -> None:
        self.transport = transport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self.transport.handle_async_request(request)

    async def aclose(self) -> None:
        pass


def tenant_client(
    pool: SharedTransport, headers: Mapping[str, str], auth: httpx2.Auth | None = None
) -> httpx2.AsyncClient:
    """A caller's client of a per-caller source: its own headers (and auth) over the source's
    one pool. Building it opens no connection."""
    return httpx2.AsyncClient(transport=pool, headers=dict(headers), auth=auth)


class _Held:
    """A caller's actor, its client, and the stored values they were made with."""

    __slots__ = ("client", "ref", "values")

    def __init__(
        self, ref: ActorRef, client: httpx2.AsyncClient, values: Mapping[str, str]
    ) -> None:
        self.ref = ref
        self.client = client
        self.values = values


class PerCallerSource:
    """A tool source of its ``name`` whose every call runs in its caller's own actor.

    Args:
        name: The source's name.
        runtime: Where each caller's actor is spawned.
        values: A caller's values (by its id, and the token it presented to the gateway),
            asked before each call: the credential store's, or a token exchange's.
        store: The credential store, whose callers discovery may list as.
        build: Builds a caller's source and client from its id and its stored values; raises
            :class:`~amends_toolkit._errors.ConnectionRequired` when they are not enough.
        tasks: Where an evicted actor is stopped, off its caller's call.
        max_callers: Actors held at once; past it the least recently served one stops.
        spawn: The options of each caller's actor (``call_timeout``, ``max_per_caller``).
        not_connected: The failure of a caller (by id) with no stored values at all.
        watched: The names of the values whose change makes a caller's actor anew; of the
            others, only a value set or forgotten does (OAuth tokens change as they refresh).
    """

    honours_cancellation = True

    def __init__(
        self,
        *,
        name: str,
        runtime: Runtime,
        values: Callable[[str, str | None], Awaitable[Mapping[str, str]]],
        store: CredentialStore,
        build: Callable[[str, Mapping[str, str]], Awaitable[tuple[ToolSource, httpx2.AsyncClient]]],
        tasks: TaskGroup,
        max_callers: int,
        spawn: Mapping[str, object],
        not_connected: Callable[[str], ConnectionRequired],
        watched: frozenset[str],
    ) -> None:
        self._watched = watched
        self._name = name
        self._runtime = runtime
        self._values = values
        self._store = store
        self._build = build
        self._tasks = tasks
        self._max_callers = max_callers
        self._spawn_options = dict(spawn)
        self._not_connected = not_connected
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._lock = anyio.Lock()

    @property
    def name(self) -> str:
        return self._name

    def __len__(self) -> int:
        """Callers with an actor now."""
        return len(self._held)

    async def discover(self) -> Sequence[ToolDefinition]:
        """The tools, listed with the credentials of the caller served most recently (or, at
        start, of a caller with stored values): tool definitions are shared by every caller,
        the credentials never are.

        Raises:
            ConnectionRequired: no caller has connected yet.
        """
        served = _SERVING.get()
        if served is not None:
            return await (await self._actor(served[0].id, served[1])).discover()
        if self._held:
            return await next(reversed(self._held.values())).ref.discover()
        for who, source, _ in await self._store.entries():
            if source == self._name:
                return await (await self._actor(who, None)).discover()
        raise ConnectionRequired(
            source=self._name, message="No caller has connected its account to this source yet."
        )

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return await (await self._caller_actor()).call(tool, input)

    async def _caller_actor(self) -> ActorRef:
        served = _SERVING.get()
        if served is None:
            # The configuration refuses a per-caller source without [auth] keys or oauth.
            raise ConnectionRequired(
                source=self._name, message="This source serves only callers the gateway knows."
            )
        return await self._actor(served[0].id, served[1])

    async def _actor(self, caller: str, bearer: str | None) -> ActorRef:
        values = await self._values(caller, bearer)
        async with self._lock:
            held = self._held.get(caller)
            if held is not None and self._same(held.values, values):
                self._held.move_to_end(caller)
                return held.ref
            if held is not None:
                # Its values changed (or are gone): its actor carries them no more.
                self._evict(caller)
            if not values:
                raise self._not_connected(caller)
            source, client = await self._build(caller, values)
            ref = await self._spawn(source)
            self._held[caller] = _Held(ref=ref, client=client, values=values)
            while len(self._held) > self._max_callers:
                self._evict(next(iter(self._held)))
            return ref

    def _same(self, held: Mapping[str, str], values: Mapping[str, str]) -> bool:
        """Whether a caller's actor, made with ``held``, still carries ``values``."""
        return held.keys() == values.keys() and all(
            held[name] == values[name] for name in self._watched if name in values
        )

    async def _spawn(self, source: ToolSource) -> ActorRef:
        return await self._runtime.spawn(source, **self._spawn_options)  # type: ignore[arg-type]

    def _evict(self, caller: str) -> None:
        held = self._held.pop(caller)
        self._tasks.start_soon(self._stopped, held)

    async def _stopped(self, held: _Held) -> None:
        with anyio.CancelScope(shield=True):
            await self._runtime.stop(held.ref)
            await held.client.aclose()
