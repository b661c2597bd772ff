"""``[auth] type = "oauth"``: the gateway as a protected resource, against a real authorization
server (node's ``oidc-provider``, ``tests/cli/oidc/provider.mjs``) issuing JWT access tokens for a
resource indicator.

Over a real gateway process: a provider's token lets the SDK client list and call in both eras;
no token, a token for another audience, one without the scope, one signed by another key, ``none``
and HMAC are refused with the status and challenge the MCP authorization specification says;
the Protected Resource Metadata documents are right. In process (for a leeway of 0 and counts):
an expired token, the verified-token cache, a flood of unknown ``kid``s, a header too long, an
issuer whose metadata is another's, an http issuer elsewhere than loopback.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from amends_toolkit.adapters import Refused
from amends_toolkit.cli._oauth_resource import (
    MAX_DOCUMENT_BYTES,
    MAX_KEYS,
    MAX_TOKEN_CHARS,
    OAuthResource,
)
from conformance._servers import serve

from .authserver import TIMEOUT, AuthServer, auth_server
from .gateway import GatewayProcess
from .test_gateway import text
from .test_gateway_sessions import HEADERS, INITIALIZE
from .upstream import NOTES_DOCUMENT

pytestmark = pytest.mark.anyio

__all__ = ("auth_server",)

UPSTREAM = Path(__file__).with_name("upstream.py")


SEEN: list[str | None] = []
"""The ``Authorization`` header of each request the gateway made to the notes API."""


def notes_recorder() -> Starlette:
    async def list_notes(request: Request) -> Response:
        SEEN.append(request.headers.get("authorization"))
        return JSONResponse([])

    return Starlette(routes=[Route("/notes", list_notes, methods=["GET"])])


def write_config(directory: Path, issuer: str, notes_port: int) -> Path:
    (directory / "notes.json").write_text(json.dumps(NOTES_DOCUMENT))
    config = directory / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "grower"
stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]
env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}

[[sources]]
name = "notes"
openapi = "notes.json"
base_url = "http://127.0.0.1:{notes_port}"

[policy]
allow = ["grower__*", "notes__listNotes"]

[auth]
type = "oauth"
issuer = {json.dumps(issuer)}
scopes = ["mcp:tools"]
"""
    )
    return config


@pytest.fixture(scope="module")
def gateway(
    auth_server: AuthServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    with serve(notes_recorder()) as notes_port:
        directory = tmp_path_factory.mktemp("oauth")
        process = GatewayProcess(write_config(directory, auth_server.issuer, notes_port))
        try:
            process.wait_ready()
            yield process
        finally:
            process.stop()


def challenge(answer: httpx.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer`` challenge."""
    scheme, _, rest = answer.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    found = {}
    for part in rest.split(", "):
        name, _, value = part.partition("=")
        found[name] = value.strip('"')
    return found


def post_list(url: str, token: str | None) -> httpx.Response:
    """An ``initialize`` with this token (none: no ``Authorization``)."""
    headers = dict(HEADERS)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=TIMEOUT)


def forged(payload: dict[str, Any], *, kid: str, algorithm: str = "RS256") -> str:
    """A token signed by a key of this test's own, under the provider's ``kid``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": kid})


def claims_of(auth_server: AuthServer, url: str) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": auth_server.issuer, "sub": "mallory", "aud": url, "scope": "mcp:tools",
            "iat": now, "exp": now + 600}  # fmt: skip


async def test_a_providers_token_lists_and_calls_through_the_gateway_in_both_eras(
    gateway: GatewayProcess, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    token = auth_server.token(url)
    for mode in ("legacy", "2026-07-28"):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert "grower__add" in listed
            result = await client.call_tool("grower__add", {"a": 2, "b": 3})
            assert not result.is_error
            assert json.loads(text(result)) == {"result": 5}
            notes = await client.call_tool("notes__listNotes", {})
            assert not notes.is_error
    assert token not in "\n".join(gateway.lines)
    assert SEEN  # the notes API was called, and never with the caller's token
    assert all(seen is None or token not in seen for seen in SEEN)


def test_a_request_without_a_token_is_401_naming_the_resource_metadata(
    gateway: GatewayProcess, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    answer = post_list(url, None)
    assert answer.status_code == 401
    found = challenge(answer)
    assert found["resource_metadata"] == f"{gateway.base}/.well-known/oauth-protected-resource/mcp"
    assert found["scope"] == "mcp:tools"
    assert "error" not in found  # RFC 6750: no error code without a credential
    for credential in ("Bearer", "Basic YTpi"):
        answer = httpx.post(
            url, json=INITIALIZE, headers={**HEADERS, "authorization": credential}, timeout=TIMEOUT
        )
        assert answer.status_code == 401


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])  # fmt: skip
def test_the_protected_resource_metadata_names_the_resource_and_the_issuer(
    gateway: GatewayProcess, auth_server: AuthServer, path: str
) -> None:
    url = gateway.wait_ready()
    answer = httpx.get(gateway.base + path, timeout=TIMEOUT)
    assert answer.status_code == 200
    metadata = answer.json()
    assert metadata["resource"] == url
    assert metadata["authorization_servers"] == [auth_server.issuer]  # exactly: clients compare
    assert metadata["scopes_supported"] == ["mcp:tools"]
    assert metadata["bearer_methods_supported"] == ["header"]


def test_a_token_for_another_audience_is_401(
    gateway: GatewayProcess, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    other = auth_server.token(f"{gateway.base}/other")
    answer = post_list(url, other)
    assert answer.status_code == 401
    assert challenge(answer)["error"] == "invalid_token"
    assert "not for this resource" in challenge(answer)["error_description"]
    assert post_list(url, auth_server.token(url)).status_code == 200


def test_a_token_without_the_scope_is_403_insufficient_scope(
    gateway: GatewayProcess, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    answer = post_list(url, auth_server.token(url, scope="other"))
    assert answer.status_code == 403
    found = challenge(answer)
    assert found["error"] == "insufficient_scope"
    assert found["scope"] == "mcp:tools"
    assert found["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


def test_a_token_signed_by_another_key_none_or_hmac_is_401(
    gateway: GatewayProcess, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    kid = auth_server.jwks()["keys"][0]["kid"]  # type: ignore[index]
    payload = claims_of(auth_server, url)
    answer = post_list(url, forged(payload, kid=kid))
    assert answer.status_code == 401
    assert "signature" in challenge(answer)["error_description"]

    def unsigned(header: dict[str, Any], key: bytes | None) -> str:
        def part(value: object) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

        signing_input = f"{part(header)}.{part(payload)}"
        mac = b"" if key is None else hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
        return signing_input + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    public = json.dumps(auth_server.jwks()["keys"][0]).encode()  # type: ignore[index]
    for token in (
        unsigned({"alg": "none", "kid": kid}, None),
        unsigned({"alg": "HS256", "kid": kid}, public),
    ):
        answer = post_list(url, token)
        assert answer.status_code == 401
        assert "algorithm" in challenge(answer)["error_description"]


# In process: an OAuthResource over the same provider.


def request(token: str | None) -> Request:
    headers = [] if token is None else [(b"authorization", f"Bearer {token}".encode())]
    return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": headers})


RESOURCE = "http://127.0.0.1:1/mcp"


async def test_an_expired_token_is_401_once_its_exp_passes(auth_server: AuthServer) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(
            issuer=auth_server.issuer, resource=RESOURCE, client=client, leeway=0
        )
        await resource.authenticate(request(auth_server.token(RESOURCE)))  # the keys, fetched
        token = auth_server.token(RESOURCE, client="short")  # lives 3 seconds
        caller = await resource.authenticate(request(token))
        assert caller.name == "short"
        expires = jwt.decode(token, options={"verify_signature": False})["exp"]
        while time.time() <= expires:  # noqa: ASYNC110 - the token expires by the wall clock: no event
            await anyio.sleep(0.05)
        with pytest.raises(Refused) as refused:
            await resource.authenticate(request(token))
    assert refused.value.status == 401
    assert "expired" in refused.value.message


@pytest.mark.parametrize(("remember", "verifications"), [(60.0, 1), (0.0, 5)])
async def test_a_token_is_verified_once_and_then_remembered(
    auth_server: AuthServer, monkeypatch: pytest.MonkeyPatch, remember: float, verifications: int
) -> None:
    verified = []
    decode = jwt.decode

    def counted(*args: Any, **kwargs: Any) -> Any:
        verified.append(1)
        return decode(*args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counted)
    token = auth_server.token(RESOURCE)
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(
            issuer=auth_server.issuer,
            resource=RESOURCE,
            scopes=["mcp:tools"],
            client=client,
            remember=remember,
        )
        callers = [await resource.authenticate(request(token)) for _ in range(5)]
    assert len(verified) == verifications
    assert callers[0] == callers[4]
    assert callers[0].id == f"oauth:{auth_server.issuer} machine"
    assert callers[0].client_id == "machine"
    assert callers[0].kind == "oauth"
    assert callers[0].scopes == frozenset({"mcp:tools"})


@pytest.mark.parametrize(("max_age", "jwks_fetches"), [(3600.0, 1), (0.0, 3)])
async def test_the_issuers_keys_are_fetched_again_once_old(
    auth_server: AuthServer, max_age: float, jwks_fetches: int
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(
            issuer=auth_server.issuer, resource=RESOURCE, client=client, keys_max_age=max_age
        )
        for _ in range(3):  # three tokens, each seen once
            await resource.authenticate(request(auth_server.token(RESOURCE)))
    assert resource.fetches == 1 + jwks_fetches  # the metadata once


@pytest.mark.parametrize(("interval", "refreshes"), [(30.0, 0), (0.0, 20)])
async def test_an_unknown_kid_fetches_the_keys_again_at_most_once_per_interval(
    auth_server: AuthServer, interval: float, refreshes: int
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(
            issuer=auth_server.issuer, resource=RESOURCE, client=client, refresh_interval=interval
        )
        await resource.authenticate(request(auth_server.token(RESOURCE)))
        assert resource.fetches == 2  # the metadata and the JWKS
        payload = claims_of(auth_server, RESOURCE)
        refused = 0
        for number in range(20):
            try:
                await resource.authenticate(request(forged(payload, kid=f"unknown-{number}")))
            except Refused as error:
                refused += error.status == 401 and "unknown" in error.message
    assert refused == 20
    assert resource.fetches == 2 + refreshes  # the JWKS again (its address is kept)


async def test_a_header_too_long_is_refused_unread_and_one_nested_deep_is_no_jwt(
    auth_server: AuthServer,
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(issuer=auth_server.issuer, resource=RESOURCE, client=client)
        with pytest.raises(Refused) as refused:
            await resource.authenticate(request("e" * MAX_TOKEN_CHARS))
        deep = '{"alg":"RS256","x":' + "[" * 3000 + "]" * 3000 + "}"
        nested = base64.urlsafe_b64encode(deep.encode()).rstrip(b"=").decode() + ".e30.c2ln"
        assert len(nested) < MAX_TOKEN_CHARS
        with pytest.raises(Refused) as malformed:
            await resource.authenticate(request(nested))
    assert refused.value.status == 401
    assert "too long" in refused.value.message
    assert malformed.value.status == 401
    assert "not a JWT" in malformed.value.message
    assert resource.fetches == 0


async def test_an_issuer_whose_metadata_names_another_is_not_trusted(
    auth_server: AuthServer,
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        resource = OAuthResource(issuer=auth_server.issuer + "/", resource=RESOURCE, client=client)
        with pytest.raises(Refused) as refused:
            await resource.authenticate(request(auth_server.token(RESOURCE)))
    assert refused.value.status == 503


@pytest.mark.parametrize("issuer", ["http://idp.example.com", "http://10.0.0.1/", "ftp://127.0.0.1/"])  # fmt: skip
async def test_an_issuer_over_http_is_refused_unless_on_loopback(issuer: str) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        with pytest.raises(ValueError, match="https://"):
            OAuthResource(issuer=issuer, resource=RESOURCE, client=client)
        for loopback in ("http://127.0.0.1:9", "http://[::1]:9", "http://localhost:9"):
            OAuthResource(issuer=loopback, resource=RESOURCE, client=client)


# The whole flow, as a real client does it.


class MemoryStorage:
    """The SDK client's tokens and registration, kept in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


REDIRECT = "http://127.0.0.1:9/callback"


async def log_in_and_consent(authorization_url: str) -> AuthorizationCodeResult:
    """What a person does in the browser, on oidc-provider's devInteractions forms: log in (any
    name and password), consent; then the redirect to the client, with the code."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as browser:
        answer = await browser.get(authorization_url)
        for _ in range(12):
            if answer.is_redirect:
                location = str(answer.next_request.url) if answer.next_request else ""
                if location.startswith(REDIRECT):
                    query = dict(parse_qsl(urlsplit(location).query))
                    assert "error" not in query, query
                    return AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                answer = await browser.get(location)
                continue
            assert answer.status_code == 200, answer.text
            page = answer.text
            action = re.search(r'<form[^>]*action="([^"]+)"', page)
            assert action is not None, page
            fields = dict(
                re.findall(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page)
            )
            if 'name="login"' in page:
                fields |= {"login": "alice", "password": "anything"}
            answer = await browser.post(str(answer.url.join(action[1])), data=fields)
    raise AssertionError("the provider's forms did not end in a redirect to the client")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_sdk_clients_oauth_flow_reaches_the_gateways_tools(
    gateway: GatewayProcess, auth_server: AuthServer, mode: str
) -> None:
    url = gateway.wait_ready()
    visited: list[str] = []
    authorized: list[str] = []

    async def redirect(authorization_url: str) -> None:
        authorized.append(authorization_url)

    async def callback() -> AuthorizationCodeResult:
        return await log_in_and_consent(authorized[-1])

    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="the SDK's client",
            redirect_uris=[AnyUrl(REDIRECT)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )

    async def seen(request: httpx2.Request) -> None:
        visited.append(f"{request.method} {request.url.copy_with(query=None)}")

    async with (
        httpx2.AsyncClient(auth=provider, event_hooks={"request": [seen]}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "grower__add" in listed
        result = await client.call_tool("grower__add", {"a": 4, "b": 5})
        assert json.loads(text(result)) == {"result": 9}
    issuer = auth_server.issuer
    # The 401, the resource metadata, the server's metadata, registration, the token.
    assert visited[0] == f"POST {url}"
    assert f"GET {gateway.base}/.well-known/oauth-protected-resource/mcp" in visited
    assert f"GET {issuer}/.well-known/oauth-authorization-server" in visited
    assert f"POST {issuer}/reg" in visited
    assert f"POST {issuer}/token" in visited
    assert "code_challenge_method=S256" in authorized[0]
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == url
    assert claims["sub"] == "alice"


async def test_a_gateway_on_every_address_needs_an_audience() -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        with pytest.raises(ValueError, match="audience"):
            OAuthResource(
                issuer="https://idp.example.com", resource="http://0.0.0.0:80/mcp", client=client
            )
        public = OAuthResource(
            issuer="https://idp.example.com",
            resource="http://0.0.0.0:80/mcp",
            audience="https://gw.example.com/mcp",
            client=client,
        )
    assert public.metadata_url == "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
    paths = {route.path for route in public.routes()}  # type: ignore[attr-defined]
    assert paths == {
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    }


# Scripted wire cases a real issuer does not send.

ISSUER = "https://idp.example.com"


def scripted(keys: list[dict[str, Any]], *, padding: int = 0) -> httpx.MockTransport:
    """An issuer with no RFC 8414 document, OpenID's, and a JWKS of these keys."""

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx.Response(200, json={"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"})
        if path == "/jwks":
            return httpx.Response(200, json={"keys": keys, "padding": "x" * padding})
        return httpx.Response(404)

    return httpx.MockTransport(answer)


def signed_by_new_key() -> tuple[dict[str, Any], str]:
    """A public JWK and a token for ``RESOURCE`` signed by its key, ``kid`` ``k0``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    claims = {"iss": ISSUER, "sub": "s", "aud": RESOURCE, "exp": int(time.time()) + 60}
    return jwk, jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k0"})


async def test_openid_discovery_is_read_when_rfc_8414_is_not() -> None:
    jwk, token = signed_by_new_key()
    async with httpx.AsyncClient(transport=scripted([{**jwk, "kid": "k0"}])) as client:
        resource = OAuthResource(issuer=ISSUER, resource=RESOURCE, client=client)
        caller = await resource.authenticate(request(token))
    assert caller.id == f"oauth:{ISSUER} s"
    assert resource.fetches == 3  # RFC 8414's 404, OpenID's, the JWKS


@pytest.mark.parametrize(("count", "padding"), [(MAX_KEYS + 1, 0), (1, MAX_DOCUMENT_BYTES)])
async def test_a_jwks_of_too_many_keys_or_bytes_is_refused(count: int, padding: int) -> None:
    jwk, token = signed_by_new_key()
    keys = [{**jwk, "kid": f"k{number}"} for number in range(count)]
    async with httpx.AsyncClient(transport=scripted(keys, padding=padding)) as client:
        resource = OAuthResource(issuer=ISSUER, resource=RESOURCE, client=client)
        with pytest.raises(Refused) as refused:
            await resource.authenticate(request(token))
    assert refused.value.status == 503


async def test_an_issuer_that_cannot_be_reached_is_503_and_asked_once_per_interval() -> None:
    asked = []

    def down(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(502)

    _, token = signed_by_new_key()
    async with httpx.AsyncClient(transport=httpx.MockTransport(down)) as client:
        resource = OAuthResource(issuer=ISSUER, resource=RESOURCE, client=client)
        statuses = []
        for _ in range(3):
            with pytest.raises(Refused) as refused:
                await resource.authenticate(request(token))
            statuses.append(refused.value.status)
    assert statuses == [503, 503, 503]
    assert refused.value.headers["Retry-After"] == "30"
    assert len(asked) == 2  # RFC 8414's and OpenID's, once
