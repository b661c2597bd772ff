"""``amends-toolkit serve`` as a subprocess over real servers, with real MCP clients.

Behind the gateway: an MCP server of the official SDK (sessions and 2026-07-28 on one endpoint),
an SDK server over stdio that can add a tool and say so, and an OpenAPI document over a Starlette
app. In front: 50 official SDK clients at once (both eras) and our own ``at.mcp.http`` source.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

import amends_toolkit as at
from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .upstream import NOTES_DOCUMENT, notes_app, tasks_app

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("upstream.py")
ALLOWED = {
    "tasks__list_tasks",
    "tasks__grow",
    "tasks__delete_task",
    "tasks__slow",
    "notes__listNotes",
    "grower__add",
    "grower__grow",
}


def write_config(directory: Path, tasks_port: int, notes_port: int, **serve: Any) -> Path:
    (directory / "notes.json").write_text(json.dumps(NOTES_DOCUMENT))
    options = "\n".join(f"{key} = {json.dumps(value)}" for key, value in serve.items())
    config = directory / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "tasks"
mcp = "http://127.0.0.1:{tasks_port}/mcp"
headers = {{ Authorization = "Bearer ${{TASKS_TOKEN}}" }}

[[sources]]
name = "grower"
stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]
env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}

[[sources]]
name = "notes"
openapi = "notes.json"
base_url = "http://127.0.0.1:{notes_port}"

[policy]
allow = ["tasks__*", "notes__listNotes", "grower__*"]
approve = ["tasks__delete_*"]
block = ["tasks__secret"]

[serve]
{options}

[auth]
type = "none"
"""
    )
    return config


TASKS = tasks_app()


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[int, int]]:
    with serve(TASKS) as tasks_port, serve(notes_app()) as notes_port:
        yield tasks_port, notes_port


@pytest.fixture(scope="module")
def gateway(
    upstream: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    config = write_config(tmp_path_factory.mktemp("gateway"), *upstream)
    process = GatewayProcess(config, env={"TASKS_TOKEN": "the-tasks-token"})
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_unnamed_tools_are_blocked_and_listed_once_at_start(gateway: GatewayProcess) -> None:
    notes = [line for line in gateway.lines if "no [policy] pattern names them" in line]
    assert len(notes) == 1
    assert "notes__deleteNote" in notes[0]
    assert "tasks__secret" not in notes[0]  # named by block: not unnamed


async def test_fifty_sdk_clients_and_our_source_list_and_call_through_the_gateway(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    outcomes: list[str] = []

    async def sdk_client(mode: str) -> None:
        async with Client(url, mode=mode, cache=None) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert listed >= ALLOWED
            assert "tasks__secret" not in listed
            assert "notes__deleteNote" not in listed
            tasks = await client.call_tool("tasks__list_tasks", {})
            assert not tasks.is_error
            assert "water the plants" in text(tasks)
            notes = await client.call_tool("notes__listNotes", {})
            assert not notes.is_error
            assert "call Ana" in text(notes)
            added = await client.call_tool("grower__add", {"a": 2, "b": 3})
            assert not added.is_error
            assert "5" in text(added)
            refused = await client.call_tool("tasks__delete_task", {"task_id": 1})
            assert refused.is_error
            assert "nobody could be asked" in text(refused)
            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool("tasks__secret", {})
            outcomes.append(client.protocol_version)

    async with anyio.create_task_group() as tasks:
        for index in range(50):
            tasks.start_soon(sdk_client, "legacy" if index % 2 else "auto")
    assert len(outcomes) == 50
    assert {"2026-07-28", "2025-11-25"} <= set(outcomes)

    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        source = await runtime.spawn(at.mcp.http(name="gateway", url=url, client=client))
        names = {d.name for d in await source.discover()}
        assert names >= ALLOWED
        assert "tasks__secret" not in names
        assert await source.call("tasks__list_tasks", {}) == {
            "result": ["water the plants", "buy bread"]
        }
        with pytest.raises(at.CallFailedError, match="nobody could be asked"):
            await source.call("tasks__delete_task", {"task_id": 2})
        with pytest.raises(at.NotFoundError):
            await source.call("tasks__secret", {})


async def test_a_line_is_logged_per_call_without_its_input(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()
    async with Client(url, cache=None) as client:
        await client.call_tool("tasks__delete_task", {"task_id": 3})
        await client.call_tool("grower__add", {"a": 40417, "b": 1})
    await eventually(
        lambda: any(e["tool"] == "grower__add" for e in gateway.events("gateway.call"))
    )
    calls = gateway.events("gateway.call")
    assert {"tool", "outcome", "ms", "era"} <= set(calls[-1])
    assert {e["outcome"] for e in calls} >= {"ok", "ApprovalRequired"}
    assert not any("40417" in line for line in gateway.lines)


async def test_metrics_parse_and_count_calls_by_outcome(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()
    async with Client(url, cache=None) as client:
        await client.call_tool("tasks__delete_task", {"task_id": 3})
        await client.call_tool("grower__add", {"a": "not a number", "b": 1})
        # What the module's gateway serves now: a test before this one may have grown it.
        served = {tool.name for tool in (await client.list_tools()).tools}
    assert served >= ALLOWED
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{gateway.base}/metrics")).text
        health = (await http.get(f"{gateway.base}/healthz")).json()
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
    }
    assert samples[("amends_gateway_call_failures_total", (("code", "ApprovalRequired"),))] >= 1
    assert samples[("amends_gateway_call_failures_total", (("code", "InvalidInputError"),))] >= 1
    calls = ("amends_gateway_calls_total", (("profile", "default"), ("tool", "grower__add")))
    assert samples[calls] >= 1
    assert samples[("amends_gateway_call_seconds_count", ())] >= 2
    for source in ("tasks", "grower", "notes"):
        assert samples[("amends_actor_in_flight", (("source", source),))] == 0
        assert ("amends_actor_restarts", (("source", source),)) in samples
    assert health == {
        "ready": True,
        "sources": {"tasks": "ok", "grower": "ok", "notes": "ok"},
        "tools": len(served),
    }


async def test_list_changed_from_a_source_reaches_connected_clients(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message, types.ToolListChangedNotification
        ):
            told.set()
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            told.set()

    async with (
        Client(url, mode="legacy", cache=None, message_handler=on_message) as session_client,
        Client(url, cache=None) as modern_client,
        modern_client.listen(tools_list_changed=True) as subscription,
    ):
        await session_client.list_tools()
        grown = await modern_client.call_tool("grower__grow", {})
        assert "grown" in text(grown)
        with anyio.fail_after(20):
            async for event in subscription:
                assert type(event).__name__ == "ToolsListChanged"
                break
            await told.wait()
        listed = {tool.name for tool in (await session_client.list_tools()).tools}
        assert "grower__extra" in listed
        extra = await modern_client.call_tool("grower__extra", {})
        assert "extra" in text(extra)


async def test_list_changed_from_an_http_source_reaches_connected_clients(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    async with Client(url, cache=None) as client, client.listen(tools_list_changed=True) as heard:
        assert "growing" in text(await client.call_tool("tasks__grow", {}))
        with anyio.fail_after(20):
            async for event in heard:
                assert type(event).__name__ == "ToolsListChanged"
                break
        assert "grown" in text(await client.call_tool("tasks__grown", {}))


async def test_sighup_refreshes_the_catalog_and_tells_clients(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()

    def quietly_added() -> str:
        """A tool the server added without saying so."""
        return "quiet"

    TASKS.state.mcp.add_tool(quietly_added)
    async with Client(url, cache=None) as client, client.listen(tools_list_changed=True) as heard:
        assert "tasks__quietly_added" not in {t.name for t in (await client.list_tools()).tools}
        gateway.process.send_signal(signal.SIGHUP)
        with anyio.fail_after(20):
            async for event in heard:
                assert type(event).__name__ == "ToolsListChanged"
                break
        assert "tasks__quietly_added" in {t.name for t in (await client.list_tools()).tools}
