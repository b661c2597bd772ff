"""Hostile clients of ``amends-toolkit serve`` (issue 27, items 5, 9 and 12), each over a real
gateway subprocess on loopback.

- Distinct huge tool names: ``/metrics`` keeps one ``unknown`` series, each log line stays
  bounded, the calls count as ``NotFoundError``, and the memory the gateway keeps does not grow
  with what was sent.
- A large catalog: ``tools/list`` answers in pages that the SDK's client (both eras) and our own
  ``at.mcp.http`` follow; a refresh builds the listing in a worker thread.
- Operator endpoints: a foreign ``Host`` is refused (421) at ``/healthz`` and ``/metrics`` as at
  the MCP endpoint; ``/healthz`` names the reason a source failed and no address, URL path or
  command, which stay in the operator's log.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

import amends_toolkit as at
from amends_toolkit._log import MAX_LOG_FIELD
from amends_toolkit._peer import MAX_MODEL_TEXT
from amends_toolkit.adapters._mcp_server import LIST_PAGE_SIZE
from amends_toolkit.cli._config import load_config
from amends_toolkit.cli._gateway import Gateway
from amends_toolkit.cli._output import Output
from cli.gateway import GatewayProcess, eventually
from conformance._servers import closed_port

pytestmark = pytest.mark.anyio

TOOLS = 1_234
"""Tools of the large catalog: more than two pages."""


def notes_document(count: int) -> dict[str, object]:
    """An OpenAPI document of ``count`` operations to read, and one to delete (blocked)."""
    paths: dict[str, object] = {
        f"/notes/{index}": {
            "get": {
                "operationId": f"readNote{index:04d}",
                "summary": f"Read note {index}",
                "responses": {"200": {"description": "the note"}},
            }
        }
        for index in range(count)
    }
    paths["/notes"] = {
        "delete": {"operationId": "deleteAll", "responses": {"204": {"description": "gone"}}}
    }
    return {"openapi": "3.0.3", "info": {"title": "Notes", "version": "1"}, "paths": paths}


def write_config(directory: Path, sources: str, policy: str) -> Path:
    config = directory / "gateway.toml"
    config.write_text(f'{sources}\n[policy]\n{policy}\n[auth]\ntype = "none"\n')
    return config


def large_catalog(directory: Path) -> Path:
    (directory / "notes.json").write_text(json.dumps(notes_document(TOOLS)))
    return write_config(
        directory,
        '[[sources]]\nname = "notes"\nopenapi = "notes.json"\nbase_url = "http://127.0.0.1:9"',
        'allow = ["notes__readNote*"]\nblock = ["notes__deleteAll"]',
    )


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    process = GatewayProcess(large_catalog(tmp_path_factory.mktemp("front")))
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def samples(exposition: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


async def scrape(gateway: GatewayProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient() as http:
        return samples((await http.get(f"{gateway.base}/metrics")).text)


def resident_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def not_found(code: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("amends_gateway_call_failures_total", (("code", code),))


UNKNOWN = ("amends_gateway_calls_total", (("profile", "default"), ("tool", "unknown")))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_huge_unknown_names_keep_one_series_bounded_lines_and_no_memory(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    size, calls = 1_000_000, 40
    before = await scrape(gateway)
    async with Client(url, mode="legacy", cache=None) as client:

        async def call(index: int) -> MCPError:
            # A distinct name each time: every one would be a series of its own.
            with pytest.raises(MCPError) as refused:
                await client.call_tool(f"{index:04d}" + "x" * size, {})
            return refused.value

        for index in range(4):  # the allocator's high-water mark, before measuring
            await call(index)
        lines_before = len(gateway.lines)
        resident = resident_bytes(gateway.process.pid)
        for index in range(4, 4 + calls):
            error = await call(index)
        grown = resident_bytes(gateway.process.pid) - resident
    await eventually(lambda: len(gateway.lines) >= lines_before + calls)
    after = await scrape(gateway)

    assert error.error.code == types.INVALID_PARAMS
    assert len(error.error.message) <= MAX_MODEL_TEXT + len("Unknown tool: ")
    served = {f"notes__readNote{index:04d}" for index in range(TOOLS)} | {"unknown"}
    labels = {
        dict(labels)["tool"] for name, labels in after if name == "amends_gateway_calls_total"
    }
    assert labels <= served
    assert after[UNKNOWN] - before.get(UNKNOWN, 0) == calls + 4
    assert (
        after[not_found("NotFoundError")] - before.get(not_found("NotFoundError"), 0) == calls + 4
    )
    assert not_found("cancelled") not in after
    logged = [e for e in gateway.events("gateway.call") if e["tool"].startswith("00")]
    assert {e["outcome"] for e in logged} == {"NotFoundError"}
    assert {e["decision"] for e in logged} == {"blocked"}
    assert all(len(e["tool"]) <= MAX_LOG_FIELD for e in logged)
    assert max(len(line) for line in gateway.lines[lines_before:]) <= MAX_LOG_FIELD + 300
    # What it keeps is no share of what it was sent (each name once would be 40 MB and more).
    assert grown < calls * size / 4, f"the gateway grew by {grown} bytes"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_blocked_name_is_counted_and_logged_as_not_found(
    gateway: GatewayProcess, mode: str
) -> None:
    url = gateway.wait_ready()
    before = await scrape(gateway)
    async with Client(url, mode=mode, cache=None) as client:
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("notes__deleteAll", {})
    await eventually(
        lambda: any(e["tool"] == "notes__deleteAll" for e in gateway.events("gateway.call"))
    )
    after = await scrape(gateway)
    assert after[UNKNOWN] - before.get(UNKNOWN, 0) == 1
    assert after[not_found("NotFoundError")] - before.get(not_found("NotFoundError"), 0) == 1
    assert (
        "amends_gateway_calls_total",
        (("profile", "default"), ("tool", "notes__deleteAll")),
    ) not in after
    logged = [e for e in gateway.events("gateway.call") if e["tool"] == "notes__deleteAll"]
    assert {e["outcome"] for e in logged} == {"NotFoundError"}
    assert {e["decision"] for e in logged} == {"blocked"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_follows_the_pages_of_a_large_catalog(
    gateway: GatewayProcess, mode: str
) -> None:
    url = gateway.wait_ready()
    pages: list[list[str]] = []
    async with Client(url, mode=mode, cache=None) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            pages.append([tool.name for tool in page.tools])
            cursor = page.next_cursor
            if cursor is None:
                break
        last = await client.call_tool(pages[-1][-1], {})
    assert [len(page) for page in pages] == [LIST_PAGE_SIZE, LIST_PAGE_SIZE, TOOLS - 1_000]
    assert [name for page in pages for name in page] == [
        f"notes__readNote{index:04d}" for index in range(TOOLS)
    ]
    assert last.is_error  # the notes API is not there: the call reached the source
    assert "unavailable" in last.content[0].text  # type: ignore[union-attr]


async def test_our_client_follows_the_pages_of_a_large_catalog(gateway: GatewayProcess) -> None:
    url = gateway.wait_ready()
    async with httpx.AsyncClient() as http, at.Runtime() as runtime:
        source = await runtime.spawn(at.mcp.http(name="gateway", url=url, client=http))
        names = [definition.name for definition in await source.discover()]
    assert names == [f"notes__readNote{index:04d}" for index in range(TOOLS)]


async def test_a_refresh_builds_the_listing_in_a_worker_thread(tmp_path: Path) -> None:
    gateway = Gateway(load_config(large_catalog(tmp_path)), output=Output())
    toolkit = at.assemble([], lambda _, __: "allow")
    front = at.adapters.mcp_server(
        {"default": (toolkit, [])}, name="gateway", select=lambda caller: "default"
    )
    gateway.front = front
    built_in: list[threading.Thread] = []
    replace_all = front.replace_all

    def recorded(toolkits: Mapping[str, tuple[at.Toolkit, Iterable[at.Member]]]) -> None:
        built_in.append(threading.current_thread())
        replace_all(toolkits)

    async def discovered() -> dict[str, tuple[at.ToolDefinition, ...]]:
        return {}

    front.replace_all = recorded  # type: ignore[method-assign]
    gateway._discover = discovered  # type: ignore[method-assign]
    await gateway.refresh()
    [thread] = built_in
    assert thread is not threading.main_thread()


SECRET_PATH = "/hooks/T0A1B2C3D4/sk_live_4eC39HqLyjWDarjtT1zdp7dc/mcp"
MISSING_COMMAND = "/opt/internal/deploy-7f3a/secret-tool"
SAID_ON_STDERR = "/srv/internal/credentials.yaml"


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[tuple[GatewayProcess, int]]:
    port = closed_port()
    dies = f"import sys; sys.stderr.write('cannot read {SAID_ON_STDERR}\\n'); sys.exit(3)"
    config = write_config(
        tmp_path,
        f"""
[[sources]]
name = "hooks"
mcp = "http://127.0.0.1:{port}{SECRET_PATH}"

[[sources]]
name = "missing"
stdio = [{json.dumps(MISSING_COMMAND)}]

[[sources]]
name = "dies"
stdio = [{json.dumps(sys.executable)}, "-c", {json.dumps(dies)}]
""",
        'allow = ["*"]',
    )
    process = GatewayProcess(config)
    try:
        process.wait_ready()
        yield process, port
    finally:
        process.stop()


async def test_healthz_names_the_reason_and_no_address_path_or_command(
    failing: tuple[GatewayProcess, int],
) -> None:
    gateway, port = failing
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{gateway.base}/healthz")
    said = answer.text
    for secret in (
        f"127.0.0.1:{port}",
        "T0A1B2C3D4",
        "sk_live",
        "/hooks",
        MISSING_COMMAND,
        "deploy-7f3a",
        SAID_ON_STDERR,
        sys.executable,
        "http",
    ):
        assert secret not in said, secret
    sources = answer.json()["sources"]
    assert set(sources) == {"hooks", "missing", "dies"}
    for why in sources.values():
        assert why.startswith("failed: UnavailableError: ")
        assert "gateway.discover_failed" in why
    # The whole of it is the operator's, in the log.
    logged = {e["source"]: e for e in gateway.events("gateway.discover_failed")}
    assert logged["hooks"]["level"] == "warning"
    assert SECRET_PATH in logged["hooks"]["error"]
    assert MISSING_COMMAND in logged["missing"]["error"]


async def test_a_foreign_host_is_refused_at_every_endpoint(
    failing: tuple[GatewayProcess, int],
) -> None:
    gateway, _ = failing
    url = gateway.wait_ready()
    async with httpx.AsyncClient() as http:
        for target in (f"{gateway.base}/healthz", f"{gateway.base}/metrics", url):
            foreign = await http.get(target, headers={"Host": "attacker.example"})
            assert foreign.status_code == 421, target
            assert "sources" not in foreign.text
            assert "amends_" not in foreign.text
            origin = await http.get(target, headers={"Origin": "http://attacker.example"})
            assert origin.status_code == 403, target
        # Let in with its own Host: every source failed, so not ready, and saying why.
        health = await http.get(f"{gateway.base}/healthz")
        assert health.status_code == 503
        assert "why" in health.json()
        assert (await http.get(f"{gateway.base}/metrics")).status_code == 200
    with anyio.fail_after(30):
        async with Client(url, cache=None) as client:
            assert (await client.list_tools()).tools == []
