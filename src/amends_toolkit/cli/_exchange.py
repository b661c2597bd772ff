"""RFC 8693 token exchange for a per-caller source (``exchange = { token_url, audience, ... }``).

A caller signed in to the gateway with a token (``[auth] type = "oauth"``) is never sent
upstream with that token: the MCP specification forbids passing a client's token on. The
gateway asks the authorization server that issued it for a token meant for the upstream
(``grant_type=urn:ietf:params:oauth:grant-type:token-exchange``, ``subject_token`` the caller's
token, ``audience`` the upstream's), authenticating as its own client, and sends that one. It
is kept for the caller until ``refresh_before`` seconds before it expires (one per caller, at
most ``max_cached``; past it the least recently used is forgotten), then exchanged again.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

import anyio
import httpx2

from amends_toolkit._errors import AuthenticationError, UnavailableError
from amends_toolkit._log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ("EXCHANGED", "GRANT", "MAX_EXCHANGE_ANSWER", "Exchanger")

_log = get_logger("amends_toolkit.gateway")

GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
_ACCESS_TOKEN: Final = "urn:ietf:params:oauth:token-type:access_token"
EXCHANGED: Final = "access_token"
"""The name of the exchanged token among a caller's values (sent as ``Bearer``)."""
MAX_EXCHANGE_ANSWER: Final = 65_536
"""The most bytes of the authorization server's answer read."""
DEFAULT_LIFETIME: Final = 300.0
"""Seconds an exchanged token is kept when the server says no ``expires_in``."""


class Exchanger:
    """Exchanges callers' tokens for the upstream's, and keeps each until shortly before it
    expires.

    Args:
        source: The source's name (in its errors).
        token_url: The authorization server's token endpoint.
        audience: The upstream, as the exchanged token's audience.
        client_id: The gateway's client.
        client_secret: Its secret.
        client: The HTTP client the exchanges are sent with (the gateway's, shared).
        refresh_before: Seconds before its expiry when a kept token is exchanged anew.
        max_cached: Callers' tokens kept at once.
    """

    def __init__(
        self,
        *,
        source: str,
        token_url: str,
        audience: str,
        client_id: str,
        client_secret: str,
        client: httpx2.AsyncClient,
        refresh_before: float,
        max_cached: int,
    ) -> None:
        self._source = source
        self._token_url = token_url
        self._audience = audience
        self._auth = httpx2.BasicAuth(client_id, client_secret)
        self._client = client
        self._refresh_before = refresh_before
        self._max_cached = max_cached
        self._kept: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._locks: dict[str, anyio.Lock] = {}

    async def values(self, caller: str, bearer: str | None) -> Mapping[str, str]:
        """The caller's exchanged token, as ``{"access_token": ...}``; none without a
        presented token and none kept (discovery, outside any call).

        Raises:
            AuthenticationError: the server refused the exchange.
            UnavailableError: it could not be reached, or answered what cannot be read.
        """
        kept = self._kept.get(caller)
        if kept is not None and time.time() < kept[1] - self._refresh_before:
            self._kept.move_to_end(caller)
            return {EXCHANGED: kept[0]}
        if bearer is None:
            return {}
        lock = self._locks.setdefault(caller, anyio.Lock())
        try:
            async with lock:
                kept = self._kept.get(caller)
                if kept is None or time.time() >= kept[1] - self._refresh_before:
                    kept = await self._exchange(bearer)
                    self._kept[caller] = kept
                    self._kept.move_to_end(caller)
                    while len(self._kept) > self._max_cached:
                        self._kept.popitem(last=False)
        finally:
            if not lock.statistics().tasks_waiting:
                self._locks.pop(caller, None)
        return {EXCHANGED: kept[0]}

    async def _exchange(self, bearer: str) -> tuple[str, float]:
        form = {
            "grant_type": GRANT,
            "subject_token": bearer,
            "subject_token_type": _ACCESS_TOKEN,
            "requested_token_type": _ACCESS_TOKEN,
            "audience": self._audience,
        }
        try:
            async with self._client.stream(
                "POST", self._token_url, data=form, auth=self._auth
            ) as answer:
                body = bytearray()
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_EXCHANGE_ANSWER:
                        raise UnavailableError(
                            source=self._source, message="the token exchange answered too much"
                        )
                status = answer.status_code
        except httpx2.HTTPError as error:
            raise UnavailableError(
                source=self._source, message=f"the token exchange failed ({type(error).__name__})"
            ) from None
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if status in (400, 401, 403):
            # Its error code only: the description may echo what it was sent.
            code = data.get("error") if isinstance(data, dict) else None
            _log.info("gateway.exchange_refused", source=self._source, status=status, error=code)
            raise AuthenticationError(
                source=self._source, message=f"the token exchange was refused ({code})"
            )
        token = data.get("access_token") if isinstance(data, dict) else None
        if status != 200 or not isinstance(token, str) or not token:
            raise UnavailableError(
                source=self._source, message=f"the token exchange answered {status}"
            )
        assert isinstance(data, dict)
        lifetime = data.get("expires_in")
        seconds = float(lifetime) if isinstance(lifetime, int | float) else DEFAULT_LIFETIME
        return token, time.time() + seconds
