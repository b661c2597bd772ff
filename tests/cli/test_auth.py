"""``[auth]`` over a real gateway process, with the official SDK client in both eras: keys,
``type = "none"``, the start rules, the Host and Origin check on every host, ``/metrics``' key
and the audit lines."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .gateway import SRC, GatewayProcess, eventually, grower_config
from .test_gateway import text
from .test_gateway_requests import CALL, MODERN, post
from .test_gateway_sessions import HEADERS, INITIALIZE, ping

pytestmark = pytest.mark.anyio

ALICE = secrets.token_urlsafe(32)
BOB = secrets.token_urlsafe(32)
METRICS = secrets.token_urlsafe(32)
ENV = {"ALICE_KEY": ALICE, "BOB_KEY": BOB, "METRICS_KEY": METRICS}
KEYS = '[auth]\ntype = "keys"\nkeys = { alice = "${ALICE_KEY}", bob = "${BOB_KEY}" }\n'


def config(directory: Path, auth: str, **serve: Any) -> Path:
    """A gateway over one stdio source (``grower__add``), with this ``[auth]`` and ``[serve]``."""
    return grower_config(directory, auth=auth, **serve)


@contextmanager
def running(path: Path, env: dict[str, str] | None = None) -> Iterator[GatewayProcess]:
    process = GatewayProcess(path, env=ENV if env is None else env)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def refused_to_start(path: Path, env: dict[str, str] | None = None) -> str:
    """The gateway's stderr when it exits at start, having refused its configuration."""
    done = subprocess.run(
        [sys.executable, "-m", "amends_toolkit", "serve", str(path), "--port", "0"],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "serving" not in done.stderr
    return done.stderr


@asynccontextmanager
async def keyed(url: str, key: str, mode: str) -> AsyncIterator[Client]:
    """An official SDK client presenting ``key`` as its Bearer token."""
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client


def calls(gateway: GatewayProcess) -> list[dict[str, Any]]:
    return gateway.events("gateway.call")


async def logged(
    gateway: GatewayProcess, event: str, since: int, count: int
) -> list[dict[str, Any]]:
    """An event's lines after its first ``since``, once ``count`` more have come (a thread reads
    the gateway's stderr: a line written before an answer may be read after it)."""
    await eventually(lambda: len(gateway.events(event)) >= since + count)
    return gateway.events(event)[since:]


def secrets_shown(gateway: GatewayProcess) -> list[str]:
    return [line for line in gateway.lines if any(k in line for k in (ALICE, BOB, METRICS))]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    path = config(tmp_path_factory.mktemp("keys"), KEYS, metrics_key="${METRICS_KEY}")
    with running(path) as process:
        yield process


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_callers_key_lists_and_calls_and_the_audit_line_names_it(
    gateway: GatewayProcess, mode: str
) -> None:
    url = gateway.wait_ready()
    before = len(calls(gateway))
    async with keyed(url, ALICE, mode) as alice, keyed(url, BOB, mode) as bob:
        assert "grower__add" in {tool.name for tool in (await alice.list_tools()).tools}
        assert text(await alice.call_tool("grower__add", {"a": 2, "b": 3})) == '{"result": 5}'
        assert text(await bob.call_tool("grower__add", {"a": 1, "b": 1})) == '{"result": 2}'
    lines = await logged(gateway, "gateway.call", before, 2)
    assert [(line["caller"], line["kind"]) for line in lines] == [
        ("alice", "keys"),
        ("bob", "keys"),
    ]
    assert secrets_shown(gateway) == []


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        pytest.param(None, "no_credential", id="none"),
        pytest.param(
            "Bearer " + ALICE[:-1] + ("A" if ALICE[-1] != "A" else "B"), "bad_key", id="wrong"
        ),
        pytest.param("Basic " + ALICE, "no_credential", id="basic"),
        pytest.param("Bearer", "no_credential", id="empty"),
    ],
)
async def test_no_key_or_a_wrong_one_is_401_with_a_challenge_and_no_tool_runs(
    gateway: GatewayProcess, authorization: str | None, reason: str
) -> None:
    url = gateway.wait_ready()
    before_calls, before_refused = len(calls(gateway)), len(gateway.events("gateway.refused"))
    extra = {} if authorization is None else {"authorization": authorization}
    for body, headers in ((CALL, MODERN), (INITIALIZE, HEADERS)):
        answer = await post(url, body, {**headers, **extra})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == 'Bearer realm="amends-toolkit"'
        assert answer.json()["error"] == reason
    refused = await logged(gateway, "gateway.refused", before_refused, 2)
    assert len(calls(gateway)) == before_calls
    assert [(r["reason"], r["status"], r["kind"]) for r in refused] == [(reason, 401, "keys")] * 2
    assert secrets_shown(gateway) == []


async def test_one_callers_session_is_404_to_another(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()
    async with (
        httpx.AsyncClient(headers={"authorization": f"Bearer {ALICE}"}) as alice,
        httpx.AsyncClient(headers={"authorization": f"Bearer {BOB}"}) as bob,
    ):
        answer = await alice.post(url, json=INITIALIZE, headers=HEADERS)
        session = answer.headers["mcp-session-id"]
        assert await ping(bob, url, session) == 404
        assert await ping(alice, url, session) == 200


async def test_healthz_is_open_and_metrics_asks_for_its_key(gateway: GatewayProcess) -> None:
    base = gateway.base
    before = len(gateway.events("gateway.refused"))
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{base}/healthz")).status_code == 200
        bare = await http.get(f"{base}/metrics")
        assert bare.status_code == 401
        assert bare.headers["www-authenticate"] == 'Bearer realm="amends-toolkit"'
        caller_key = await http.get(f"{base}/metrics", headers={"authorization": f"Bearer {ALICE}"})
        assert caller_key.status_code == 401
        right = await http.get(f"{base}/metrics", headers={"authorization": f"Bearer {METRICS}"})
        assert right.status_code == 200
        assert "amends_gateway" in right.text
    refused = await logged(gateway, "gateway.refused", before, 2)
    assert [(r["reason"], r["kind"]) for r in refused] == [
        ("no_credential", "metrics_key"),
        ("bad_key", "metrics_key"),
    ]


async def test_without_a_metrics_key_metrics_stays_open(tmp_path: Path) -> None:
    with running(config(tmp_path, KEYS)) as gateway:
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{gateway.base}/metrics")).status_code == 200


async def test_a_foreign_host_or_origin_is_refused_on_every_address(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        KEYS,
        host="0.0.0.0",
        allowed_hosts=["gw.example.com"],
        allowed_origins=["https://app.example.com"],
    )
    with running(path) as gateway:
        # Bound to every address, reached on loopback.
        port = httpx.URL(gateway.wait_ready()).port
        url = f"http://127.0.0.1:{port}/mcp"
        key = {"authorization": f"Bearer {ALICE}"}
        for body, headers in ((CALL, MODERN), (INITIALIZE, HEADERS)):
            sent = {**headers, **key}
            assert (await post(url, body, {**sent, "host": "attacker.example"})).status_code == 421
            foreign = {**sent, "origin": "http://attacker.example"}
            assert (await post(url, body, foreign)).status_code == 403
            proxied = {**sent, "host": "gw.example.com", "origin": "https://app.example.com"}
            assert (await post(url, body, proxied)).status_code == 200
            assert (await post(url, body, sent)).status_code == 200
        async with httpx.AsyncClient() as http:
            health = await http.get(
                f"http://127.0.0.1:{port}/healthz", headers={"host": "attacker.example"}
            )
            assert health.status_code == 421
    # Stopped: every line is read. Only the two calls let in ran (the proxied one, the plain one).
    assert [line["caller"] for line in calls(gateway)] == ["alice", "alice"]
    refused = [(r["reason"], r["status"]) for r in gateway.events("gateway.refused")]
    assert refused == [("foreign_host", 421), ("foreign_origin", 403)] * 2 + [("foreign_host", 421)]
    # The SDK's check would have written the header's value: a caller's text, of any length.
    assert [line for line in gateway.lines if "attacker" in line] == []


async def test_none_serves_loopback_with_a_warning_and_names_no_address(tmp_path: Path) -> None:
    with running(config(tmp_path, '[auth]\ntype = "none"\n')) as gateway:
        url = gateway.wait_ready()
        assert any("anyone on this machine can call" in line for line in gateway.lines)
        async with Client(url, mode="2026-07-28", cache=None) as client:
            assert text(await client.call_tool("grower__add", {"a": 1, "b": 2})) == '{"result": 3}'
        async with httpx.AsyncClient(headers={"host": "attacker.example"}) as http:
            assert await ping(http, url, "any") == 421
    [line] = calls(gateway)
    assert line["kind"] == "none"
    assert "caller" not in line


def test_none_on_a_host_other_than_loopback_does_not_start(tmp_path: Path) -> None:
    said = refused_to_start(config(tmp_path, '[auth]\ntype = "none"\n', host="0.0.0.0"))
    assert 'type = "none"' in said
    assert "loopback" in said


def test_without_auth_the_gateway_does_not_start_and_names_the_fix(tmp_path: Path) -> None:
    said = refused_to_start(config(tmp_path, ""))
    assert "no [auth]" in said
    assert 'type = "none"' in said


def test_a_short_or_unset_key_stops_the_start_naming_the_key_never_its_value(
    tmp_path: Path,
) -> None:
    short = "k" * 31
    said = refused_to_start(config(tmp_path, KEYS), {"ALICE_KEY": ALICE, "BOB_KEY": short})
    assert "key 'bob' is shorter than 32 characters" in said
    assert short not in said
    unset = refused_to_start(config(tmp_path, KEYS), {"ALICE_KEY": ALICE})
    assert "key 'bob' takes its value from ${BOB_KEY}, which is not set" in unset
    assert ALICE not in unset
    metrics = refused_to_start(
        config(tmp_path, KEYS, metrics_key="${METRICS_KEY}"), {**ENV, "METRICS_KEY": short}
    )
    assert "metrics_key is shorter than 32 characters" in metrics


INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
"""The MCP Inspector pinned, installed once into ``.inspector/`` (git-ignored) by npm."""


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's command, installed with npm unless it is there; the test is skipped only
    when npm is missing or cannot install it (no network)."""
    prefix = Path(__file__).resolve().parents[2] / ".inspector"
    command = prefix / "node_modules" / ".bin" / "inspector"
    stamp = prefix / f".installed-{INSPECTOR.rsplit('@', 1)[1]}"
    if not stamp.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: the MCP Inspector CLI comes from npm")
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
             str(prefix), INSPECTOR],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"npm could not install {INSPECTOR}: {done.stderr.strip()[-300:]}")
        stamp.touch()
    return command


def inspect(command: Path, url: str, *args: str, key: str | None = None) -> dict[str, Any]:
    """What the Inspector's CLI prints (JSON) for one method, or a failure's status."""
    header = () if key is None else ("--header", f"Authorization: Bearer {key}")
    done = subprocess.run(
        [str(command), "--cli", url, "--transport", "http", *header, *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return {"failed": done.returncode, "said": done.stdout + done.stderr}
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


async def test_the_mcp_inspector_cli_connects_with_a_key(
    gateway: GatewayProcess, inspector: Path
) -> None:
    url = gateway.wait_ready()
    before = len(calls(gateway))
    listed = inspect(inspector, url, "--method", "tools/list", key=ALICE)
    assert "grower__add" in {tool["name"] for tool in listed["tools"]}, listed
    called = inspect(
        inspector, url, "--method", "tools/call", "--tool-name", "grower__add",
        "--tool-arg", "a=2", "b=3", key=ALICE,
    )  # fmt: skip
    assert called["content"][0]["text"] == '{"result": 5}', called
    # Without the key, the gateway's 401 leads the Inspector to OAuth, which it cannot do here.
    assert "auth_required" in inspect(inspector, url, "--method", "tools/list").get("said", "")
    assert [line["caller"] for line in await logged(gateway, "gateway.call", before, 1)] == [
        "alice"
    ]
