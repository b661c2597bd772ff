"""``[[profiles]]`` over a real gateway process with keys, and the official SDK client in both
eras: each caller is served its profile's toolkit (sources, policy, presentation), a caller no
profile matches is ``[policy]``'s or refused, and the audit lines and metrics name the profile."""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from .gateway import UPSTREAM, GatewayProcess
from .test_auth import calls, keyed, logged, running
from .test_gateway import text
from .test_gateway_requests import CALL, MODERN, post
from .test_gateway_sessions import HEADERS, INITIALIZE

pytestmark = pytest.mark.anyio

KEYS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob", "carol", "dave")}
ENV = {f"{name.upper()}_KEY": key for name, key in KEYS.items()}
PROFILES = """
[[profiles]]
name = "eng"
match = { keys = ["alice"] }
sources = ["grower"]
policy = { allow = ["*__add", "grower__extra"] }

[[profiles]]
name = "ops"
match = { keys = ["bob", "alice"] }
sources = ["other"]
policy = { allow = ["other__*"] }

[[profiles]]
name = "finder"
match = { keys = ["carol"] }
presentation = "search"
policy = { allow = ["other__add", "grower__add"] }
"""
POLICY = '[policy]\nallow = ["grower__add", "other__add"]\n'


def config(directory: Path, *, policy: str = POLICY) -> Path:
    """A gateway over two stdio sources of the same upstream (``grower`` and ``other``), keys
    for alice, bob, carol and dave, the three profiles above, and this ``[policy]``."""
    source = (
        f'stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]\n'
        f"env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}\n"
    )
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    path = directory / "gateway.toml"
    path.write_text(
        f'[[sources]]\nname = "grower"\n{source}\n[[sources]]\nname = "other"\n{source}\n'
        f'{policy}\n[auth]\ntype = "keys"\nkeys = {{ {keys} }}\n{PROFILES}'
    )
    return path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running(config(tmp_path_factory.mktemp("profiles")), env=ENV) as process:
        yield process


async def listed(url: str, who: str, mode: str) -> list[str]:
    async with keyed(url, KEYS[who], mode) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_each_caller_lists_and_calls_its_profiles_toolkit_alone(
    gateway: GatewayProcess, mode: str
) -> None:
    url = gateway.wait_ready()
    # Other sources (eng's policy would allow other__add), other policies; the first profile
    # that matches alice is eng, not ops.
    assert await listed(url, "alice", mode) == ["grower__add"]
    assert sorted(await listed(url, "bob", mode)) == ["other__add", "other__grow"]
    assert await listed(url, "carol", mode) == ["tool_search", "tool_call"]
    assert sorted(await listed(url, "dave", mode)) == ["grower__add", "other__add"]
    before = len(calls(gateway))
    async with keyed(url, KEYS["alice"], mode) as alice, keyed(url, KEYS["bob"], mode) as bob:
        assert text(await alice.call_tool("grower__add", {"a": 2, "b": 3})) == '{"result": 5}'
        assert text(await bob.call_tool("other__add", {"a": 1, "b": 1})) == '{"result": 2}'
        # Another profile's tool is no tool of this caller's, as a blocked one is not.
        for client, name in (
            (alice, "other__add"),
            (alice, "grower__grow"),
            (bob, "grower__add"),
        ):
            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool(name, {"a": 1, "b": 1})
    async with keyed(url, KEYS["carol"], mode) as carol:
        found = await carol.call_tool("tool_search", {"query": "add two integers"})
        assert {t["name"] for t in json.loads(text(found))["tools"]} == {
            "grower__add",
            "other__add",
        }
        added = await carol.call_tool(
            "tool_call", {"name": "other__add", "input": {"a": 4, "b": 4}}
        )
        assert '"result": 8' in text(added)
        with pytest.raises(MCPError, match="Unknown tool"):
            await carol.call_tool("other__add", {"a": 1, "b": 1})
    async with keyed(url, KEYS["dave"], mode) as dave:
        assert text(await dave.call_tool("other__add", {"a": 3, "b": 3})) == '{"result": 6}'
    lines = await logged(gateway, "gateway.call", before, 9)
    assert [(line["caller"], line["profile"], line["tool"], line["outcome"]) for line in lines] == [
        ("alice", "eng", "grower__add", "ok"),
        ("bob", "ops", "other__add", "ok"),
        ("alice", "eng", "other__add", "NotFoundError"),
        ("alice", "eng", "grower__grow", "NotFoundError"),
        ("bob", "ops", "grower__add", "NotFoundError"),
        ("carol", "finder", "tool_search", "ok"),
        ("carol", "finder", "tool_call", "ok"),
        ("carol", "finder", "other__add", "NotFoundError"),
        ("dave", "default", "other__add", "ok"),
    ]


async def test_the_calls_metric_counts_by_profile_and_a_tool_served_to_the_caller(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    async with keyed(url, KEYS["bob"], "2026-07-28") as bob:
        await bob.call_tool("other__add", {"a": 1, "b": 2})
        with pytest.raises(MCPError, match="Unknown tool"):
            await bob.call_tool("grower__add", {"a": 1, "b": 2})
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{gateway.base}/metrics")).text
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "amends_gateway_calls"
        for sample in family.samples
        if sample.name.endswith("_total")
    }
    assert (
        samples[("amends_gateway_calls_total", (("profile", "ops"), ("tool", "other__add")))] >= 1
    )
    # grower__add is served, but not to ops: its label is unknown, as any name not served.
    assert samples[("amends_gateway_calls_total", (("profile", "ops"), ("tool", "unknown")))] >= 1
    assert not any(name in metrics for name in ("alice", "bob", "carol", "dave"))


async def test_without_policy_a_caller_no_profile_matches_is_refused_in_both_eras(
    tmp_path: Path,
) -> None:
    with running(config(tmp_path, policy=""), env=ENV) as gateway:
        url = gateway.wait_ready()
        assert await listed(url, "alice", "legacy") == ["grower__add"]
        dave = {"authorization": f"Bearer {KEYS['dave']}"}
        before = len(gateway.events("gateway.refused"))
        for body, headers in ((CALL, MODERN), (INITIALIZE, HEADERS)):
            answer = await post(url, body, {**headers, **dave})
            assert answer.status_code == 403
            assert answer.json()["error"] == "no_profile"
            assert (
                "No profile of this gateway serves this caller"
                in answer.json()["error_description"]
            )
        refused = await logged(gateway, "gateway.refused", before, 2)
        assert [(r["reason"], r["status"], r["caller"]) for r in refused] == [
            ("no_profile", 403, "dave")
        ] * 2
        assert calls(gateway) == []
        assert any(
            "no [policy]: a caller that no [[profiles]] matches is refused" in line
            for line in gateway.lines
        )
        assert not any(KEYS["dave"] in line for line in gateway.lines)


async def test_a_session_is_told_when_its_profiles_toolkit_changed(tmp_path: Path) -> None:
    policy = '[policy]\nallow = ["grower__add", "grower__grow"]\n'
    with running(config(tmp_path, policy=policy), env=ENV) as gateway:
        url = gateway.wait_ready()
        told = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                told.set()

        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {KEYS['alice']}"}) as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                cache=None,
                message_handler=on_message,
            ) as alice,
            keyed(url, KEYS["dave"], "2026-07-28") as dave,
        ):
            assert [tool.name for tool in (await alice.list_tools()).tools] == ["grower__add"]
            # dave's [policy] may grow the grower source; eng's policy allows the tool it adds.
            assert "grown" in text(await dave.call_tool("grower__grow", {}))
            with anyio.fail_after(20):
                await told.wait()
            assert sorted(tool.name for tool in (await alice.list_tools()).tools) == [
                "grower__add",
                "grower__extra",
            ]
        assert sorted(await listed(url, "bob", "legacy")) == ["other__add", "other__grow"]
        assert "extra" not in await listed(url, "dave", "legacy")
