"""Who calls an MCP front: the :class:`Caller` an :class:`Authenticator` establishes per request.

The front (:meth:`~amends_toolkit.adapters.mcp_front.ToolkitServer.streamable_http_app` with
``authenticator=``) asks the authenticator about every request to its MCP endpoint before the SDK
sees it; a request it refuses is answered as the :class:`Refused` says and reaches no handler.
The caller it gives is kept in the request's ASGI scope, where :func:`caller_of` reads it: the
front binds a session to it, and a host (the gateway) picks the caller's toolkit, limits and
audit fields by it.

This module needs no SDK: it is the seam, not the transport.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from amends_toolkit._json import JsonValue

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import BaseRoute


__all__ = ("CALLER_SCOPE_KEY", "Authenticator", "Caller", "Refused", "caller_of")

CALLER_SCOPE_KEY: Final = "amends_toolkit.caller"
"""The key of the ASGI scope under which the front keeps a request's :class:`Caller`."""


@attrs.frozen(kw_only=True)
class Caller:
    """One authenticated caller of a front.

    Attributes:
        id: A stable key, unique across the kinds of authentication (``"key:alice"``,
            ``"oauth:<issuer> <sub>"``, ``"none:<address>"``): what a session is bound to and
            what a caller's shares and rate limits are counted by. Never a credential.
        name: What an audit line names: a key's name, a token's ``sub``.
        kind: How the caller was established: ``"oauth"``, ``"keys"`` or ``"none"``.
        client_id: The OAuth client the token was issued to (``client_id`` or ``azp``), if any.
        scopes: The token's scopes (empty for keys and none).
        claims: The token's claims (empty for keys and none), for matching profiles.
    """

    id: str
    name: str
    kind: str
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, JsonValue] = attrs.field(factory=dict)


class Refused(Exception):
    """An authenticator's refusal of a request: the HTTP answer the client gets.

    Args:
        status: 401 for no or a bad credential, 403 for one without the rights asked for.
        message: A short text for the client (no credential, no address).
        headers: Headers of the answer, such as ``WWW-Authenticate``.
        reason: A constant word for the audit line and the metrics (``"no_credential"``,
            ``"bad_token"``, ``"insufficient_scope"``...).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        reason: str = "refused",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers: Mapping[str, str] = dict(headers or {})
        self.reason = reason

    def response(self) -> JSONResponse:
        """The HTTP answer the client gets: its status and headers, and the body
        ``{"error": reason, "error_description": message}`` (OAuth's error form)."""
        from starlette.responses import JSONResponse

        return JSONResponse(
            {"error": self.reason, "error_description": self.message},
            status_code=self.status,
            headers=dict(self.headers),
        )


class Authenticator(Protocol):
    """Establishes the caller of each request to a front's MCP endpoint."""

    async def authenticate(self, request: Request) -> Caller:
        """The request's caller.

        Raises:
            Refused: The request is not let in; the client gets its status and headers.
        """
        ...

    def routes(self) -> Sequence[BaseRoute]:
        """Routes the front serves beside its endpoint without authentication (such as OAuth's
        protected resource metadata); may be empty."""
        ...


def caller_of(scope: Mapping[str, Any]) -> Caller | None:
    """The caller the front's authenticator established for a request (its ASGI scope, or a
    Starlette request's ``scope``); ``None`` when the front has no authenticator."""
    caller = scope.get(CALLER_SCOPE_KEY)
    return caller if isinstance(caller, Caller) else None
