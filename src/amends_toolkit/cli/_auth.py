"""Who may call the gateway: the ``[auth]`` section's rules at start, and its authenticators for
``type = "keys"`` and ``type = "none"`` (``"oauth"`` is :mod:`amends_toolkit.cli._oauth_resource`).

Both implement the front's seam (:class:`~amends_toolkit.adapters.Authenticator`): the front asks
about every request to its MCP endpoint, and a session is bound to the :class:`Caller` it gets.
A key is presented as ``Authorization: Bearer <key>`` and compared in constant time with every
key, so neither a key's length nor which key matched shows in how long an answer takes.
"""

from __future__ import annotations

import hmac
import os
from typing import TYPE_CHECKING, Final

from amends_toolkit.adapters import Caller, Refused
from amends_toolkit.cli._config import ConfigError, expand_header

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from starlette.datastructures import Headers
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from amends_toolkit.cli._config import AuthConfig, GatewayConfig

__all__ = (
    "CHALLENGE",
    "MIN_KEY_LENGTH",
    "KeyAuthenticator",
    "OpenAuthenticator",
    "expand_key",
    "required_auth",
)

MIN_KEY_LENGTH: Final = 32
"""The fewest characters of a key (``[auth] keys``, ``[serve] metrics_key``): a shorter one is
refused at start, as one a person could guess or type from memory."""
CHALLENGE: Final = {"WWW-Authenticate": 'Bearer realm="amends-toolkit"'}
"""The headers of a 401 for a missing or wrong key (RFC 6750)."""


def required_auth(config: GatewayConfig) -> AuthConfig:
    """The ``[auth]`` the gateway serves with.

    Raises:
        ConfigError: the file has none (the message names ``type = "none"`` for local use).
    """
    if config.auth is None:
        raise ConfigError(
            f"{config.path}: no [auth]: say who may call the gateway, such as\n"
            '  [auth]\n  type = "keys"\n  keys = { alice = "${ALICE_KEY}" }\n'
            'or, for local use on a loopback [serve] host, [auth] type = "none" '
            "(anyone on this machine may then call)"
        )
    return config.auth


def expand_key(
    template: str, *, what: str, path: Path, environ: Mapping[str, str] | None = None
) -> str:
    """A key's value from its template (``${VAR}``) and the environment.

    Raises:
        ConfigError: the variable is not set, or the key is shorter than ``MIN_KEY_LENGTH``
            (the message names ``what``, never the key).
    """
    try:
        key = expand_header(template, dict(os.environ if environ is None else environ))
    except KeyError as unset:
        raise ConfigError(
            f"{path}: {what} takes its value from ${{{unset.args[0]}}}, which is not set"
        ) from None
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(
            f"{path}: {what} is shorter than {MIN_KEY_LENGTH} characters: make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return key


def _bearer(headers: Headers) -> str | None:
    """The credential of ``Authorization: Bearer <credential>`` (the scheme in any case)."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


def _key_named(presented: str, keys: Mapping[str, bytes]) -> str | None:
    """The name of the key presented, compared in constant time with every key (no early exit,
    so the time taken does not say which key, or how much of one, matched)."""
    given = presented.encode()
    found = None
    for name, key in keys.items():
        if hmac.compare_digest(given, key) and found is None:
            found = name
    return found


class KeyAuthenticator:
    """``type = "keys"``: a caller presents one of the configured keys as a Bearer token, and is
    the caller of that key's name (``Caller(id="key:<name>", name=<name>, kind="keys")``).

    Args:
        keys: A key's name to the key.
    """

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._keys = {name: key.encode() for name, key in keys.items()}

    @classmethod
    def from_config(
        cls, auth: AuthConfig, *, path: Path, environ: Mapping[str, str] | None = None
    ) -> KeyAuthenticator:
        """The authenticator of ``[auth] keys``, each expanded from the environment.

        Raises:
            ConfigError: a key's variable is not set, or a key is too short (naming its name).
        """
        return cls(
            {
                name: expand_key(template, what=f"[auth] key {name!r}", path=path, environ=environ)
                for name, template in auth.keys.items()
            }
        )

    async def authenticate(self, request: Request) -> Caller:
        """The caller of the key the request presents.

        Raises:
            Refused: 401 with ``WWW-Authenticate`` for no Bearer credential or an unknown one.
        """
        presented = _bearer(request.headers)
        if presented is None:
            raise Refused(
                401,
                "This gateway needs a key: Authorization: Bearer <key>.",
                headers=CHALLENGE,
                reason="no_credential",
            )
        name = _key_named(presented, self._keys)
        if name is None:
            raise Refused(
                401, "The key is not one of this gateway's.", headers=CHALLENGE, reason="bad_key"
            )
        return Caller(id=f"key:{name}", name=name, kind="keys")

    def routes(self) -> Sequence[BaseRoute]:
        """None: keys need no metadata."""
        return ()


class OpenAuthenticator:
    """``type = "none"``: every request is let in, its caller named by its peer address
    (``Caller(id="none:<address>", name=<address>, kind="none")``), so a session stays its
    client's. Only on a loopback host (``cli/_config.py`` refuses any other)."""

    async def authenticate(self, request: Request) -> Caller:
        """The request's peer as its caller (never refuses)."""
        address = "" if request.client is None else request.client.host
        return Caller(id=f"none:{address}", name=address, kind="none")

    def routes(self) -> Sequence[BaseRoute]:
        """None."""
        return ()
