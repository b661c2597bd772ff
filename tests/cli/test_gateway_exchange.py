"""RFC 8693 token exchange over a real gateway process (``[auth] type = "oauth"``): each
caller's inbound token is exchanged at node's ``oidc-provider`` (whose token-exchange grant
is registered in ``oidc/provider.mjs``) for a token meant for the upstream, an SDK MCP server
that requires the provider's tokens for itself and records each one. The upstream gets a
token of its own audience and of its caller's subject, never the inbound one; one exchange
serves a caller's calls until shortly before it expires."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from amends_toolkit.cli._credentials import KEY_VARIABLE, new_key

from .authserver import SECRET, AuthServer, auth_server
from .gateway import GatewayProcess
from .test_auth import running
from .test_gateway import text
from .test_gateway_connect import Upstream

pytestmark = pytest.mark.anyio

__all__ = ("auth_server",)  # the fixture, used by name

ENV = {KEY_VARIABLE: new_key(), "EXCHANGE_SECRET": SECRET}


def config(directory: Path, issuer: str, upstream: str, *, refresh_before: int) -> Path:
    path = directory / "gateway.toml"
    path.write_text(
        f"""
[[sources]]
name = "up"
mcp = "{upstream}"
credentials = "per-caller"
exchange = {{ token_url = "{issuer}/token", audience = "{upstream}", client_id = "exchanger", client_secret = "${{EXCHANGE_SECRET}}" }}

[policy]
allow = ["up__*"]

[auth]
type = "oauth"
issuer = {json.dumps(issuer)}
scopes = ["mcp:tools"]

[credentials]
store = "tokens.db"
refresh_before = {refresh_before}
"""
    )
    return path


@pytest.fixture(scope="module")
def upstream(auth_server: AuthServer) -> Iterator[Upstream]:
    with Upstream(auth_server) as served:
        yield served


@pytest.fixture(scope="module")
def gateway(
    auth_server: AuthServer, upstream: Upstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    path = config(
        tmp_path_factory.mktemp("exchange"), auth_server.issuer, upstream.url, refresh_before=60
    )
    with running(path, env=ENV) as process:
        yield process


@asynccontextmanager
async def signed_in(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client,
    ):
        yield client


async def whoami(url: str, token: str) -> str:
    async with signed_in(url, token) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "up__whoami" in listed
        result = await client.call_tool("up__whoami", {})
    assert not result.is_error, text(result)
    return str(json.loads(text(result))["result"])


async def test_each_callers_token_is_exchanged_and_never_forwarded(
    gateway: GatewayProcess, upstream: Upstream, auth_server: AuthServer
) -> None:
    url = gateway.wait_ready()
    inbound = {client: auth_server.token(url, client=client) for client in ("machine", "second")}
    # The upstream is the module's: another test may have sent it tokens already.
    before = {client: set(upstream.tokens_of(client)) for client in inbound}
    seen_before = len(upstream.seen)
    # The first caller's list finds the tools (no one had a token when the gateway started).
    assert await whoami(url, inbound["machine"]) == "machine"
    assert await whoami(url, inbound["second"]) == "second"
    assert await whoami(url, inbound["machine"]) == "machine"
    sent = [token for token, _ in upstream.seen[seen_before:] if token]
    assert sent
    # Never an inbound token, and each one sent is meant for the upstream.
    assert not set(sent) & set(inbound.values())
    for token in sent:
        claims = jwt.decode(token, options={"verify_signature": False})
        assert claims["aud"] == upstream.url
        assert claims["sub"] in ("machine", "second")
    # One exchange a caller: its calls share it until shortly before it expires.
    new = {client: set(upstream.tokens_of(client)) - before[client] for client in inbound}
    assert len(new["machine"]) == 1
    assert len(new["second"]) == 1
    assert new["machine"] != new["second"]
    assert not any(token in line for token in [*sent, *inbound.values()] for line in gateway.lines)


async def test_a_token_within_refresh_before_of_its_expiry_is_exchanged_again(
    auth_server: AuthServer, upstream: Upstream, tmp_path: Path
) -> None:
    # The provider's exchanged tokens live 600 seconds: each is within 3600 of its expiry.
    path = config(tmp_path, auth_server.issuer, upstream.url, refresh_before=3600)
    with running(path, env=ENV) as gateway:
        url = gateway.wait_ready()
        token = auth_server.token(url, client="second")
        before = set(upstream.tokens_of("second"))
        await whoami(url, token)
        await whoami(url, token)
        assert len(set(upstream.tokens_of("second")) - before) == 2
