"""``[auth] type = "oauth"``: the gateway as an OAuth 2.1 protected resource (MCP authorization).

A client learns where to get a token from the gateway itself: a request without a valid one is
answered 401 with ``WWW-Authenticate: Bearer resource_metadata="..."``, naming the Protected
Resource Metadata (RFC 9728) served at ``/.well-known/oauth-protected-resource`` (and its form
suffixed with the MCP path); that document names this resource (the audience its tokens must
hold, RFC 8707) and the authorization server. The access tokens are JWTs, checked here against
the issuer's JWKS (the issuer's metadata, RFC 8414 or OpenID Discovery, gives its address) with
PyJWT: the signature under an asymmetric algorithm of :data:`ALGORITHMS` (``none`` and HMAC never),
``iss``, ``aud``, ``exp`` and ``nbf`` within a leeway, and the required scopes (else 403
``insufficient_scope``). A token is never passed on to an upstream, and never logged.

Bounds: a token longer than :data:`MAX_TOKEN_CHARS` is refused unread; the issuer's documents are
read up to :data:`MAX_DOCUMENT_BYTES` and :data:`MAX_KEYS` keys; an unknown ``kid`` fetches the
JWKS again at most once per ``refresh_interval``; verified tokens are remembered (by a hash,
:data:`MAX_CACHED_TOKENS` of them, a minute at most), so a client's repeated token costs one
signature check a minute.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import urlsplit

import anyio
import httpx
import jwt
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route

from amends_toolkit._log import get_logger
from amends_toolkit.adapters import Caller, Refused
from amends_toolkit.cli._config import is_loopback

if TYPE_CHECKING:
    from collections.abc import Sequence

    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from amends_toolkit._json import JsonValue
    from amends_toolkit.cli._config import AuthConfig

__all__ = (
    "ALGORITHMS",
    "FETCH_TIMEOUT",
    "KEYS_MAX_AGE",
    "LEEWAY",
    "MAX_CACHED_TOKENS",
    "MAX_DOCUMENT_BYTES",
    "MAX_KEYS",
    "MAX_TOKEN_CHARS",
    "REFRESH_INTERVAL",
    "REMEMBER",
    "OAuthResource",
)

_log = get_logger("amends_toolkit.gateway")

ALGORITHMS: Final = frozenset(
    ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
)
"""The signature algorithms a token may use: asymmetric ones only (never ``none`` nor HMAC,
whose key would be the issuer's public one)."""
LEEWAY: Final = 30.0
"""Seconds of clock difference allowed on a token's ``exp`` and ``nbf``."""
MAX_TOKEN_CHARS: Final = 8_192
"""The longest ``Authorization`` header read: a longer one is refused before it is parsed."""
MAX_DOCUMENT_BYTES: Final = 256 * 1024
"""The most of the issuer's metadata or JWKS read: a longer document is refused."""
MAX_KEYS: Final = 64
"""The most keys of an issuer's JWKS kept: a longer set is refused."""
REFRESH_INTERVAL: Final = 30.0
"""Seconds at least between two fetches of the issuer's documents, however many tokens name an
unknown ``kid``."""
MAX_CACHED_TOKENS: Final = 4_096
"""Verified tokens remembered (by their SHA-256); past it the oldest is forgotten (and checked
again when it comes back)."""
REMEMBER: Final = 60.0
"""Seconds a verified token is remembered at most (less if it expires before)."""
KEYS_MAX_AGE: Final = 3_600.0
"""Seconds the issuer's JWKS is used before it is fetched again (a key the issuer withdrew stops
verifying tokens within this time)."""
FETCH_TIMEOUT: Final = 10.0
"""Seconds a fetch of one of the issuer's documents may take."""


class OAuthResource:
    """An :class:`~amends_toolkit.adapters.Authenticator` for JWT access tokens of one issuer.

    Args:
        issuer: The authorization server's issuer identifier, exactly as its tokens' ``iss``.
        resource: Where the gateway's MCP endpoint is (its own URL): the metadata's routes are
            served for its path.
        audience: What a token's ``aud`` must hold, and the metadata's ``resource`` (RFC 8707);
            ``None``: ``resource``.
        scopes: Scopes every token must have.
        client: Fetches the issuer's documents.
        leeway: See :data:`LEEWAY`.
        refresh_interval: See :data:`REFRESH_INTERVAL`.
        remember: See :data:`REMEMBER`.
        keys_max_age: See :data:`KEYS_MAX_AGE`.
        fetch_timeout: See :data:`FETCH_TIMEOUT`.

    Raises:
        ValueError: the issuer is not https, nor http on a loopback address; or no audience is
            given for a ``resource`` on every address (``0.0.0.0``), which names no resource.
    """

    def __init__(
        self,
        *,
        issuer: str,
        resource: str,
        audience: str | None = None,
        scopes: Sequence[str] = (),
        client: httpx.AsyncClient,
        leeway: float = LEEWAY,
        refresh_interval: float = REFRESH_INTERVAL,
        remember: float = REMEMBER,
        keys_max_age: float = KEYS_MAX_AGE,
        fetch_timeout: float = FETCH_TIMEOUT,
    ) -> None:
        _check_secure(issuer, "issuer")
        if audience is None and urlsplit(resource).hostname in ("0.0.0.0", "::"):
            raise ValueError(
                "a gateway on every address needs audience = the URL its clients reach its MCP "
                'path at, such as audience = "https://gw.example.com/mcp"'
            )
        self.issuer = issuer
        self.resource = resource
        self.audience = audience or resource
        self.scopes = tuple(scopes)
        self.leeway = leeway
        self.refresh_interval = refresh_interval
        self.remember = remember
        self.keys_max_age = keys_max_age
        self.fetch_timeout = fetch_timeout
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(self.audience)))
        self.fetches = 0
        """Documents fetched from the issuer so far."""
        self._client = client
        self._jwks_uri: str | None = None
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched_at = -float("inf")
        self._fetching = anyio.Lock()
        self._verified: OrderedDict[bytes, tuple[Caller, float]] = OrderedDict()

    @classmethod
    def from_config(
        cls, auth: AuthConfig, *, resource: str, client: httpx.AsyncClient
    ) -> OAuthResource:
        """The authenticator an ``[auth] type = "oauth"`` table describes, for a gateway whose
        MCP endpoint is at ``resource``."""
        assert auth.issuer is not None  # the configuration's reader requires it
        return cls(
            issuer=auth.issuer,
            resource=resource,
            audience=auth.audience,
            scopes=auth.scopes,
            client=client,
        )

    # The seam.

    def routes(self) -> Sequence[BaseRoute]:
        """The Protected Resource Metadata, at the well-known path and its forms suffixed with
        the MCP path (the audience's and the gateway's own, if they differ)."""
        # Validated from strings, so an issuer without a path keeps it so (the client compares
        # it with the issuer's metadata, character by character).
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": self.audience,
                "authorization_servers": [self.issuer],
                "scopes_supported": list(self.scopes) or None,
                "bearer_methods_supported": ["header"],
            }
        )
        handler = ProtectedResourceMetadataHandler(metadata).handle
        paths = dict.fromkeys(
            [
                "/.well-known/oauth-protected-resource",
                urlsplit(self.metadata_url).path,
                urlsplit(str(build_resource_metadata_url(AnyHttpUrl(self.resource)))).path,
            ]
        )
        return [Route(path, endpoint=handler, methods=["GET"]) for path in paths]

    async def authenticate(self, request: Request) -> Caller:
        """The caller a request's bearer token names.

        Raises:
            Refused: 401 without a token or with a bad one, 403 for one without the scopes,
                503 when the issuer's keys cannot be had.
        """
        header = request.headers.get("authorization")
        if header is None:
            raise self._refused(401, "no_credential", "An access token is required.")
        if len(header) > MAX_TOKEN_CHARS:
            raise self._refused(401, "invalid_token", "The access token is too long.")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise self._refused(401, "no_credential", "A Bearer access token is required.")
        digest = hashlib.sha256(token.encode()).digest()
        known = self._verified.get(digest)
        if known is not None and known[1] > time.time():
            return known[0]
        claims = await self._verify(token)
        scopes = _scopes(claims)
        missing = [s for s in self.scopes if s not in scopes]
        if missing:
            _log.info("gateway.token_refused", reason="insufficient_scope")
            raise self._refused(
                403, "insufficient_scope", "The access token lacks a scope this gateway requires."
            )
        subject = str(claims["sub"])
        client_id = claims.get("client_id", claims.get("azp"))
        caller = Caller(
            id=f"oauth:{claims['iss']} {subject}",
            name=subject,
            kind="oauth",
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes,
            claims=claims,
        )
        until = min(float(cast("float", claims["exp"])), time.time() + self.remember)
        self._verified[digest] = (caller, until)
        while len(self._verified) > MAX_CACHED_TOKENS:
            self._verified.popitem(last=False)
        return caller

    # Tokens.

    async def _verify(self, token: str) -> dict[str, JsonValue]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise self._bad("malformed", "The access token is not a JWT.") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise self._bad("algorithm", "The access token's algorithm is not accepted.")
        kid = header.get("kid")
        jwk = await self._key(kid if isinstance(kid, str) else None)
        if jwk is None:
            raise self._bad("unknown_key", "The access token's signing key is unknown.")
        if jwk.get("alg", algorithm) != algorithm:
            raise self._bad("algorithm", "The access token's algorithm is not its key's.")
        try:
            key = jwt.PyJWK(jwk, algorithm=algorithm)
            claims: dict[str, JsonValue] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "sub", "aud"], "strict_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise self._bad("expired", "The access token has expired.") from None
        except jwt.ImmatureSignatureError:
            raise self._bad("not_yet_valid", "The access token is not valid yet.") from None
        except jwt.InvalidAudienceError:
            raise self._bad("audience", "The access token is not for this resource.") from None
        except jwt.InvalidIssuerError:
            raise self._bad("issuer", "The access token is from another issuer.") from None
        except jwt.InvalidSignatureError:
            raise self._bad("signature", "The access token's signature is wrong.") from None
        except jwt.PyJWTError:
            raise self._bad("invalid", "The access token is not valid.") from None
        if not isinstance(claims.get("sub"), str) or not isinstance(claims.get("exp"), int | float):
            raise self._bad("invalid", "The access token is not valid.")
        return claims

    async def _key(self, kid: str | None) -> dict[str, Any] | None:
        """The issuer's key of this ``kid`` (or its only key, for a token without one),
        fetching the JWKS again if it is unknown and the last fetch is ``refresh_interval`` old,
        or if the last fetch is ``keys_max_age`` old."""
        found = self._lookup(kid)
        if found is not None and time.monotonic() - self._fetched_at < self.keys_max_age:
            return found
        async with self._fetching:
            found = self._lookup(kid)
            age = time.monotonic() - self._fetched_at
            if (found is None and age >= self.refresh_interval) or age >= self.keys_max_age:
                self._fetched_at = time.monotonic()
                try:
                    with anyio.fail_after(self.fetch_timeout):
                        await self._fetch_keys()
                except (TimeoutError, httpx.HTTPError, ValueError) as error:
                    # The operator reads why; the keys of before, if any, serve on.
                    _log.warning("gateway.issuer_unavailable", error=str(error))
            if not self._keys:
                raise Refused(
                    503,
                    "The authorization server's keys cannot be had now; try again later.",
                    headers={"Retry-After": str(round(self.refresh_interval))},
                    reason="issuer_unavailable",
                )
            return self._lookup(kid)

    def _lookup(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _fetch_keys(self) -> None:
        if self._jwks_uri is None:
            metadata = await self._metadata()
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise ValueError("the issuer's metadata names no jwks_uri")
            _check_secure(jwks_uri, "jwks_uri")
            self._jwks_uri = jwks_uri
        document = await self._document(self._jwks_uri)
        listed = document.get("keys")
        if not isinstance(listed, list) or len(listed) > MAX_KEYS:
            raise ValueError(f"the issuer's JWKS must be a list of at most {MAX_KEYS} keys")
        keys: dict[str, dict[str, Any]] = {}
        for number, jwk in enumerate(listed):
            # Symmetric keys and encryption keys never verify a token.
            if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "OKP"):
                continue
            if jwk.get("use", "sig") != "sig":
                continue
            kid = jwk.get("kid")
            keys[kid if isinstance(kid, str) else f"#{number}"] = jwk
        self._keys = keys

    async def _metadata(self) -> dict[str, Any]:
        """The issuer's metadata: RFC 8414's, else OpenID Discovery's; its ``issuer`` must be
        the configured one."""
        parts = urlsplit(self.issuer)
        path = parts.path.rstrip("/")
        origin = f"{parts.scheme}://{parts.netloc}"
        failures = []
        for url in (
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ):
            try:
                metadata = await self._document(url)
            except (httpx.HTTPError, ValueError) as error:
                failures.append(f"{url}: {error}")
                continue
            if metadata.get("issuer") != self.issuer:
                raise ValueError(f"the metadata at {url} is of another issuer")
            return metadata
        raise ValueError("no metadata of the issuer: " + "; ".join(failures))

    async def _document(self, url: str) -> dict[str, Any]:
        """A JSON object from the issuer, read up to :data:`MAX_DOCUMENT_BYTES`."""
        self.fetches += 1
        body = bytearray()
        async with self._client.stream("GET", url, headers={"Accept": "application/json"}) as got:
            if got.status_code != 200:
                raise ValueError(f"HTTP {got.status_code}")
            async for chunk in got.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"longer than {MAX_DOCUMENT_BYTES} bytes")
        try:
            document = json.loads(body)
        except ValueError:
            raise ValueError("not JSON") from None
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        return document

    # Answers.

    def _bad(self, why: str, message: str) -> Refused:
        # A constant word for the operator; never the token nor its claims.
        _log.info("gateway.token_refused", reason=why)
        return self._refused(401, "invalid_token", message)

    def _refused(self, status: int, error: str, message: str) -> Refused:
        """A refusal with the ``WWW-Authenticate`` challenge of RFC 6750 and RFC 9728."""
        # Without a credential, no error code (RFC 6750, section 3.1).
        parts = (
            []
            if error == "no_credential"
            else [f'error="{error}"', f'error_description="{message}"']
        )
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return Refused(
            status,
            message,
            headers={"WWW-Authenticate": "Bearer " + ", ".join(parts)},
            reason=error,
        )


def _scopes(claims: dict[str, JsonValue]) -> frozenset[str]:
    """A token's scopes: RFC 9068's ``scope`` (a string), or ``scp`` (a list, as some issue)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    listed = claims.get("scp")
    if isinstance(listed, list):
        return frozenset(s for s in listed if isinstance(s, str))
    return frozenset()


def _check_secure(url: str, what: str) -> None:
    """An issuer's address must be https, or http on a loopback address (a token's keys read over
    plain http elsewhere could be anyone's)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return
    raise ValueError(f"the {what} must be an https:// URL (http:// only on a loopback address)")
