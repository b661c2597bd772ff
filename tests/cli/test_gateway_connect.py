"""Per-caller OAuth over a real gateway process: node's ``oidc-provider`` (its devInteractions
sign anyone in) as the upstream's authorization server, and an upstream MCP server of the
official SDK that requires the provider's tokens for itself (a resource server, RFC 9728) and
records which token each request carried. Two callers connect two accounts through
``GET /connect/up``; each call reaches the upstream with its caller's token; a caller who has
not connected is told where to; tokens refresh; ``DELETE /connect/up`` disconnects; the store
survives a restart of the gateway."""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import anyio
import attrs
import httpx
import jwt
import pytest
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from amends_toolkit.cli._connect import TOKENS
from amends_toolkit.cli._credentials import KEY_VARIABLE, new_key, open_store

from .authserver import TIMEOUT, AuthServer, auth_server
from .gateway import GatewayProcess, eventually
from .test_auth import keyed, running
from .test_gateway import text

pytestmark = pytest.mark.anyio

__all__ = ("auth_server",)  # the fixture, used by name

KEYS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob", "carol")}
ENV = {**{f"{n.upper()}_KEY": k for n, k in KEYS.items()}, KEY_VARIABLE: new_key()}
ACCOUNTS = {"alice": "alice-account", "bob": "bob-account"}
"""The account each caller signs in to at the authorization server."""


class Upstream:
    """The SDK's MCP server as a resource server of ``auth_server``, on a loopback port of
    its own (bound first: its URL is the resource its tokens are for)."""

    def __init__(self, auth_server: AuthServer) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/mcp"
        self.issuer = auth_server.issuer
        self.keys = jwt.PyJWKSet.from_dict(auth_server.jwks())
        self.seen: list[tuple[str, str]] = []
        """(the bearer token, the JSON-RPC method) of each request."""
        try:
            app = self._app()
        except BaseException:
            self.socket.close()
            raise
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="on", http="h11")
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
            key = next(k for k in self.keys.keys if k.key_id == header.get("kid"))
            claims = jwt.decode(
                token, key.key, algorithms=["RS256", "ES256", "PS256"], audience=self.url,
                issuer=self.issuer,
            )  # fmt: skip
        except (jwt.PyJWTError, StopIteration):
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims.get("exp"),
            resource=self.url,
            subject=claims["sub"],
        )

    def _app(self) -> Any:
        from mcp.server import MCPServer

        server = MCPServer(
            "accounts",
            token_verifier=self,
            # Validated from strings: an issuer keeps its form (no "/" added to its path).
            auth=AuthSettings.model_validate(
                {
                    "issuer_url": self.issuer,
                    "resource_server_url": self.url,
                    "validate_token_resource": True,
                }
            ),
        )

        @server.tool()
        def whoami() -> str:
            """The account the call was made as."""
            token = get_access_token()
            assert token is not None
            return str(token.subject)

        @server.tool()
        def echo_auth() -> str:
            """A leaky upstream: its caller's access token, as it was sent."""
            token = get_access_token()
            assert token is not None
            return "you sent Bearer " + token.token

        app = server.streamable_http_app(stateless_http=False, json_response=True)

        async def recorded(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            token = dict(scope["headers"]).get(b"authorization", b"").decode()
            body = bytearray()
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            method = json.loads(body).get("method", "") if body.startswith(b"{") else ""
            self.seen.append((token.removeprefix("Bearer "), method))
            sent = False

            async def replay() -> Any:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}

            await app(scope, replay, send)

        return recorded

    def __enter__(self) -> Upstream:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the upstream did not start")
            self.thread.join(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.socket.close()

    def tokens_of(self, account: str, method: str = "tools/call") -> list[str]:
        found = []
        for token, seen in self.seen:
            try:
                claims = jwt.decode(token, options={"verify_signature": False})
            except jwt.PyJWTError:
                continue
            if claims.get("sub") == account and seen == method:
                found.append(token)
        return found


def config(directory: Path, upstream: str) -> Path:
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    path = directory / "gateway.toml"
    path.write_text(
        f"""
[[sources]]
name = "up"
mcp = "{upstream}"
credentials = "per-caller"
auth = "oauth"

[policy]
allow = ["up__*"]

[auth]
type = "keys"
keys = {{ {keys} }}

[credentials]
store = "tokens.db"
refresh_before = 3600
"""
    )
    return path


@pytest.fixture(scope="module")
def upstream(auth_server: AuthServer) -> Iterator[Upstream]:
    with Upstream(auth_server) as served:
        yield served


@attrs.frozen
class Connected:
    """A gateway, what it said before anyone connected, and alice's and bob's connections."""

    path: Path
    gateway: GatewayProcess
    health: dict[str, Any]
    tools: set[str]
    answers: dict[str, httpx.Response]


@pytest.fixture(scope="module")
def setup(
    upstream: Upstream, auth_server: AuthServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Connected]:
    path = config(tmp_path_factory.mktemp("connect"), upstream.url)
    with running(path, env=ENV) as process:

        async def begin() -> Connected:
            tools = await listed(process, "alice")
            async with httpx.AsyncClient() as client:
                health = (await client.get(process.base + "/healthz")).json()
            answers = {who: await connect(process, who, auth_server.issuer) for who in ACCOUNTS}
            await eventually(lambda: _has_tools(process))
            return Connected(
                path=path, gateway=process, health=health, tools=tools, answers=answers
            )

        yield anyio.run(begin)


async def connect(gateway: GatewayProcess, who: str, issuer: str) -> httpx.Response:
    """``who`` opens ``/connect/up`` in a browser, signs in to its account, consents, and is
    sent back to the gateway: the gateway's last answer."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as browser:
        headers = {"Authorization": f"Bearer {KEYS[who]}"}
        answer = await browser.get(gateway.base + "/connect/up", headers=headers)
        for _ in range(20):
            if answer.status_code in (302, 303):
                url = urljoin(str(answer.url), answer.headers["location"])
                answer = await browser.get(url)
                if not url.startswith(issuer):
                    return answer
                continue
            assert answer.status_code == 200, answer.text
            action = re.search(r'<form[^>]*action="([^"]+)"', answer.text)
            prompt = re.search(r'name="prompt" value="(\w+)"', answer.text)
            assert action is not None
            assert prompt is not None
            form = {"prompt": prompt[1]}
            if prompt[1] == "login":
                form |= {"login": ACCOUNTS[who], "password": "any"}
            answer = await browser.post(urljoin(str(answer.url), action[1]), data=form)
    raise AssertionError("the authorization did not end")


async def call(gateway: GatewayProcess, who: str, tool: str) -> tuple[str, bool]:
    async with keyed(gateway.wait_ready(), KEYS[who], "legacy") as client:
        result = await client.call_tool(tool, {})
    if result.is_error:
        return text(result), True
    return str(json.loads(text(result))["result"]), False


async def listed(gateway: GatewayProcess, who: str) -> set[str]:
    async with keyed(gateway.wait_ready(), KEYS[who], "legacy") as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def stored_token(path: Path, who: str) -> str:
    store = await open_store(str(path.parent / "tokens.db"), ENV)
    try:
        held = json.loads((await store.values(f"key:{who}", "up"))[TOKENS])
    finally:
        await store.aclose()
    return str(held["token"]["access_token"])


async def test_two_callers_connect_two_accounts_and_each_call_carries_its_own_token(
    setup: Connected, upstream: Upstream
) -> None:
    path, gateway = setup.path, setup.gateway
    # Before anyone connected, nobody was told of the tools (they could not be listed), and
    # nothing had failed: the gateway was ready.
    assert "up__whoami" not in setup.tools
    assert (setup.health["ready"], setup.health["sources"]) == (True, {"up": "ok"})
    for answer in setup.answers.values():
        assert answer.status_code == 200, answer.text
        assert "Connected to up" in answer.text
    assert await call(gateway, "alice", "up__whoami") == ("alice-account", False)
    assert await call(gateway, "bob", "up__whoami") == ("bob-account", False)
    assert await call(gateway, "alice", "up__whoami") == ("alice-account", False)
    # Each call carried its caller's own token (the upstream checked it and read its subject),
    # and each caller's store row holds a token of its own account.
    assert upstream.tokens_of("alice-account")[-1] != upstream.tokens_of("bob-account")[-1]
    for who, account in ACCOUNTS.items():
        claims = jwt.decode(await stored_token(path, who), options={"verify_signature": False})
        assert claims["sub"] == account
    # No request reached the upstream with a gateway key, nor with anything but a token of
    # the authorization server's (never the gateway's client secret, as a refresh sent to the
    # upstream's origin would carry).
    assert not {token for token, _ in upstream.seen} & set(KEYS.values())
    assert all(token.count(".") == 2 for token, _ in upstream.seen if token)


async def _has_tools(gateway: GatewayProcess) -> bool:
    return "up__whoami" in await listed(gateway, "alice")


async def test_tokens_refresh_before_they_expire(setup: Connected, upstream: Upstream) -> None:
    assert await call(setup.gateway, "alice", "up__whoami") == ("alice-account", False)
    # The token the connect flow was given went to the upstream once (its first request);
    # the caller's actor, finding it within refresh_before of its expiry, refreshed it.
    granted = [t for t, method in upstream.seen if method == "" and t][:1]
    assert granted
    used = upstream.tokens_of("alice-account")
    assert used
    assert granted[0] not in used


async def test_a_caller_who_has_not_connected_is_told_where_to(
    setup: Connected,
) -> None:
    gateway = setup.gateway
    answer, is_error = await call(gateway, "carol", "up__whoami")
    assert is_error
    assert f"open {gateway.base}/connect/up signed in to this gateway" in answer
    async with httpx.AsyncClient() as client:
        assert (await client.get(gateway.base + "/connect/up")).status_code == 401


async def test_an_echoed_access_token_is_redacted_for_its_caller(
    setup: Connected, upstream: Upstream
) -> None:
    gateway = setup.gateway
    answer, _ = await call(gateway, "alice", "up__echo_auth")
    assert "[redacted]" in answer
    tokens = {token for token, _ in upstream.seen if token}
    assert not any(token in answer for token in tokens)
    assert not any(token in line for token in tokens for line in gateway.lines)
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(gateway.base + "/metrics")).text
    assert not any(token in metrics for token in tokens)


async def test_a_callback_that_is_no_flow_of_the_gateways_is_refused(
    setup: Connected,
) -> None:
    gateway = setup.gateway
    callback = gateway.base + "/connect/up/callback"
    async with httpx.AsyncClient() as client:
        for query in (
            {"code": "c", "state": secrets.token_urlsafe(32)},  # a state it never gave out
            {"code": "c"},
            {"state": "s"},
        ):
            answer = await client.get(callback, params=query)
            assert answer.status_code == 400, query
    assert not any("oauth_tokens" in line for line in gateway.lines)


async def test_a_caller_disconnects_and_is_told_to_connect_again(
    setup: Connected, auth_server: AuthServer
) -> None:
    gateway = setup.gateway
    async with httpx.AsyncClient() as client:
        gone = await client.delete(
            gateway.base + "/connect/up", headers={"Authorization": f"Bearer {KEYS['bob']}"}
        )
    assert gone.status_code == 204
    answer, is_error = await call(gateway, "bob", "up__whoami")
    assert is_error
    assert "/connect/up" in answer
    assert await call(gateway, "alice", "up__whoami") == ("alice-account", False)
    # Connected again, as before.
    assert (await connect(gateway, "bob", auth_server.issuer)).status_code == 200
    assert await call(gateway, "bob", "up__whoami") == ("bob-account", False)


async def test_the_tokens_survive_a_restart_of_the_gateway(setup: Connected) -> None:
    # Another gateway process on the same store (as one started after a stop) finds them.
    with running(setup.path, env=ENV) as again:
        assert await call(again, "alice", "up__whoami") == ("alice-account", False)
