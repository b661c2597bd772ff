"""``credentials = "per-caller"`` over a real gateway process, with keys and the official SDK
client: an upstream MCP server (the official SDK's, on loopback) that requires a token of its
own and records which token each request carried. Each caller's secret is set by the admin
command (from stdin); each call reaches the upstream with its caller's token and no one
else's, a caller with none is told so, a revoked caller is refused at its next call, and no
token reaches another caller's answer, its own answer, the log or ``/metrics``."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.mcpserver import Context

from amends_toolkit.cli._credentials import KEY_VARIABLE, new_key
from conformance._servers import serve

from .gateway import SRC, GatewayProcess
from .test_auth import calls, keyed, logged, refused_to_start, running
from .test_gateway import text

pytestmark = pytest.mark.anyio

KEYS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob", "carol")}
TOKENS = {name: "upstream-" + secrets.token_urlsafe(24) for name in ("alice", "bob")}
"""Each caller's own token at the upstream (carol has none)."""
ACCOUNTS = {token: name for name, token in TOKENS.items()}
STORE_KEY = new_key()
ENV = {**{f"{n.upper()}_KEY": k for n, k in KEYS.items()}, KEY_VARIABLE: STORE_KEY}
SEEN: list[tuple[str, str]] = []
"""What the upstream was sent: (the token, the JSON-RPC method), one a request."""


def upstream_app() -> Any:
    """The SDK's MCP server behind a check of its own tokens (401 without one), recording the
    token of every request."""
    from mcp.server import MCPServer

    server = MCPServer("accounts")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The account the call was made as."""
        request = ctx.request_context.request
        assert request is not None
        token = str(request.headers["authorization"]).removeprefix("Bearer ")
        return ACCOUNTS[token]

    @server.tool()
    def echo_auth(ctx: Context) -> str:
        """A leaky upstream: the Authorization header it was sent, as it was sent."""
        request = ctx.request_context.request
        assert request is not None
        return "you sent " + str(request.headers["authorization"])

    app = server.streamable_http_app(stateless_http=False, json_response=True)

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        method = json.loads(body).get("method", "") if body.startswith(b"{") else ""
        SEEN.append((token, method))
        if token not in ACCOUNTS:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return guarded


def config(directory: Path, port: int, *, store: str = "tokens.db") -> Path:
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    path = directory / "gateway.toml"
    path.write_text(
        f"""
[[sources]]
name = "up"
mcp = "http://127.0.0.1:{port}/mcp"
credentials = "per-caller"
headers = {{ Authorization = "Bearer ${{caller:token}}" }}

[policy]
allow = ["up__*"]

[auth]
type = "keys"
keys = {{ {keys} }}

[credentials]
store = "{store}"
"""
    )
    return path


def admin(path: Path, *arguments: str, stdin: str = "", env: dict[str, str] | None = None) -> Any:
    """``amends-toolkit credentials --config PATH ...``, the value (if any) on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "amends_toolkit", "credentials", "--config", str(path), *arguments],
        input=stdin,
        env={**os.environ, "PYTHONPATH": SRC, **(ENV if env is None else env)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, GatewayProcess]]:
    with serve(upstream_app()) as port:
        path = config(tmp_path_factory.mktemp("per-caller"), port)
        for name, token in TOKENS.items():
            done = admin(path, "set", f"key:{name}", "up", "token", stdin=token + "\n")
            assert done.returncode == 0, done.stderr
        with running(path, env=ENV) as process:
            yield path, process


def secrets_shown(texts: list[str]) -> list[str]:
    every = [*TOKENS.values(), *KEYS.values()]
    return [t for t in texts if any(secret in t for secret in every)]


async def call(gateway: GatewayProcess, who: str, tool: str) -> tuple[str, bool]:
    return await call_at(gateway.wait_ready(), who, tool)


async def call_at(url: str, who: str, tool: str) -> tuple[str, bool]:
    """``who`` calls ``tool`` at ``url`` (a session of its own): its answer, and whether it is
    an error."""
    async with keyed(url, KEYS[who], "legacy") as client:
        result = await client.call_tool(tool, {})
    if result.is_error:
        return text(result), True
    return json.loads(text(result))["result"], False


async def test_each_call_reaches_the_upstream_with_its_callers_own_token(
    setup: tuple[Path, GatewayProcess],
) -> None:
    _, gateway = setup
    assert await call(gateway, "alice", "up__whoami") == ("alice", False)
    assert await call(gateway, "bob", "up__whoami") == ("bob", False)
    # Interleaved: many at once, each with its caller's token (the upstream says whose).
    answers: dict[int, str] = {}

    async def one(i: int, who: str) -> None:
        answers[i] = (await call(gateway, who, "up__whoami"))[0]

    async with anyio.create_task_group() as tasks:
        for i in range(12):
            tasks.start_soon(one, i, ("alice", "bob")[i % 2])
    assert answers == {i: ("alice", "bob")[i % 2] for i in range(12)}
    # Every request the upstream was sent carried one of its own tokens, never a gateway key.
    assert {token for token, _ in SEEN} <= {*TOKENS.values(), ""}
    assert "" not in {token for token, method in SEEN if method == "tools/call"}


async def test_a_caller_without_a_secret_is_told_to_ask_for_one(
    setup: tuple[Path, GatewayProcess],
) -> None:
    _, gateway = setup
    before, logged_before = len(SEEN), len(calls(gateway))
    answer, is_error = await call(gateway, "carol", "up__whoami")
    assert is_error
    assert "'token'" in answer
    assert "amends-toolkit credentials set" in answer
    (line,) = await logged(gateway, "gateway.call", logged_before, 1)
    assert (line["caller"], line["outcome"]) == ("carol", "ConnectionRequired")
    # It reached no upstream: carol has no token, and no one else's was used.
    assert all(method != "tools/call" for _, method in SEEN[before:])


async def test_an_upstream_that_echoes_a_token_is_redacted_for_its_caller(
    setup: tuple[Path, GatewayProcess],
) -> None:
    _, gateway = setup
    answer, _ = await call(gateway, "alice", "up__echo_auth")
    assert "[redacted]" in answer
    assert secrets_shown([answer]) == []
    answer, _ = await call(gateway, "bob", "up__echo_auth")
    assert secrets_shown([answer]) == []


async def test_no_token_reaches_the_log_or_the_metrics(
    setup: tuple[Path, GatewayProcess],
) -> None:
    _, gateway = setup
    await call(gateway, "alice", "up__whoami")
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(gateway.base + "/metrics")).text
    assert secrets_shown(list(gateway.lines)) == []
    assert secrets_shown([metrics]) == []
    assert "key:alice" not in metrics


async def test_a_revoked_caller_is_refused_at_its_next_call(
    setup: tuple[Path, GatewayProcess],
) -> None:
    path, gateway = setup
    listed = admin(path, "list")
    assert listed.stdout.splitlines() == ["key:alice\tup\ttoken", "key:bob\tup\ttoken"]
    assert secrets_shown([listed.stdout, listed.stderr]) == []
    revoked = admin(path, "revoke", "key:bob")
    assert revoked.returncode == 0, revoked.stderr
    answer, is_error = await call(gateway, "bob", "up__whoami")
    assert is_error
    assert "has no 'token' of its own" in answer
    assert await call(gateway, "alice", "up__whoami") == ("alice", False)
    # Set again: the next call carries the new value.
    assert admin(path, "set", "key:bob", "up", "token", stdin=TOKENS["bob"]).returncode == 0
    assert await call(gateway, "bob", "up__whoami") == ("bob", False)


def test_the_admin_command_refuses_a_secret_no_header_takes(
    setup: tuple[Path, GatewayProcess],
) -> None:
    path, _ = setup
    done = admin(path, "set", "key:alice", "up", "password", stdin="x" * 20)
    assert done.returncode == 1
    assert "takes no ${caller:password}; its headers take: token" in done.stderr
    done = admin(path, "set", "key:alice", "nope", "token", stdin="x" * 20)
    assert done.returncode == 1
    assert "no per-caller source is named 'nope'" in done.stderr
    done = admin(path, "set", "key:alice", "up", "token", stdin="")
    assert done.returncode == 1
    assert "no value was given" in done.stderr


def test_the_gateway_does_not_start_without_the_stores_key(
    setup: tuple[Path, GatewayProcess],
) -> None:
    path, _ = setup
    without = {k: v for k, v in ENV.items() if k != KEY_VARIABLE}
    assert KEY_VARIABLE in refused_to_start(path, without)
    wrong = {**ENV, KEY_VARIABLE: new_key()}
    assert "sealed with another key" in refused_to_start(path, wrong)
