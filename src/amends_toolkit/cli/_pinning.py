"""Session ids a load balancer's ``hash $http_mcp_session_id`` sends back to the replica that
began the session.

A balancer that hashes the ``Mcp-Session-Id`` header cannot send a session's first request
(``initialize``, which has no id yet) to the replica its hash will pick for the id that replica
then makes up: the first request goes round-robin, and the hash of the new id picks either
replica. So a replica that knows its place among the balancer's servers (``[serve] replica`` of
``replicas``) gives out ids that hash to itself: it puts a short salt before the SDK's id, chosen
so that nginx's ``hash`` (CRC32, bits 16-30, modulo the servers; ngx_http_upstream_hash_module)
picks it, and takes the salt off each request before the SDK reads the id. The 2026-07-28 era
has no session: any replica answers any request.
"""

from __future__ import annotations

import itertools
import zlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    App = Callable[
        [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
        Awaitable[None],
    ]

__all__ = ("SessionPinning", "nginx_hash_server")

_HEADER: Final = b"mcp-session-id"
_SEPARATOR: Final = "."


def nginx_hash_server(key: str, servers: int) -> int:
    """The index (from 0) of the server nginx's ``hash KEY`` (not ``consistent``) picks first,
    among ``servers`` of equal weight, all up."""
    return ((zlib.crc32(key.encode()) >> 16) & 0x7FFF) % servers


class SessionPinning:
    """ASGI middleware: salted session ids out, the SDK's ids in."""

    def __init__(self, app: App, *, replica: int, replicas: int) -> None:
        if not 1 <= replica <= replicas:
            raise ValueError("replica must be between 1 and replicas")
        self.app = app
        self.index = replica - 1
        self.replicas = replicas

    def salted(self, session_id: str) -> str:
        """The id to give out: the SDK's id behind the first salt that hashes to this replica."""
        for salt in itertools.count():
            candidate = f"{salt:x}{_SEPARATOR}{session_id}"
            if nginx_hash_server(candidate, self.replicas) == self.index:
                return candidate
        raise AssertionError("unreachable")  # pragma: no cover

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = []
        for name, value in scope["headers"]:
            if name == _HEADER:
                value = value.split(_SEPARATOR.encode(), 1)[-1]
            headers.append((name, value))
        scope = {**scope, "headers": headers}

        async def salting(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [
                        (name, self.salted(value.decode("latin-1")).encode("latin-1"))
                        if name.lower() == _HEADER
                        else (name, value)
                        for name, value in message.get("headers", [])
                    ],
                }
            await send(message)

        await self.app(scope, receive, salting)
