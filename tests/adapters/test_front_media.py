"""Through the MCP front, a client gets a source's media as MCP blocks and its progress.

In process: the SDK's ``Client`` on the front over a toolkit of ``at.mcp.http`` over the SDK
server of the conformance scenarios (``media.py``). Over the network: ``conformance/mcp/front.py``
proxies the reference server ``@modelcontextprotocol/server-everything`` (installed by
``conformance/mcp/run.sh``; this test is skipped where it is not, unless
``AMENDS_REQUIRE_EVERYTHING`` is set, as run.sh sets it).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Literal

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import AudioContent, EmbeddedResource, ImageContent, TextContent

import amends_toolkit as at

from .media import PNG, WAV, media_toolkit

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
BASE = "http://127.0.0.1:8000"


@pytest.mark.parametrize("era", ["stateless", "sessions"])
async def test_a_client_of_the_front_receives_image_audio_and_resource_blocks_as_such(
    era: Literal["stateless", "sessions"],
) -> None:
    async with media_toolkit(era) as (kit, _):
        front = at.adapters.mcp_server(kit, name="front")
        async with Client(front.server) as sdk:
            image = await sdk.call_tool("test_image_content", {})
            audio = await sdk.call_tool("test_audio_content", {})
            resource = await sdk.call_tool("test_embedded_resource", {})
            mixed = await sdk.call_tool("test_multiple_content_types", {})
            plain = await sdk.call_tool("test_tool_with_progress", {})
    assert image.content == [ImageContent(data=PNG, mime_type="image/png")]
    assert audio.content == [AudioContent(data=WAV, mime_type="audio/wav")]
    [embedded] = resource.content
    assert isinstance(embedded, EmbeddedResource)
    assert str(embedded.resource.uri) == "test://embedded-resource"
    assert [block.type for block in mixed.content] == ["text", "image", "resource"]
    assert not any(result.is_error for result in (image, audio, resource, mixed))
    # JSON that is no content blocks is served as before: structured, and its text.
    assert plain.structured_content == {"result": "done"}
    assert plain.content == [TextContent(text='{"result": "done"}')]


async def never_asked(context: object, params: object) -> object:
    raise AssertionError("no call here needs approval")


@pytest.mark.parametrize("era", ["stateless", "sessions"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("eliciting", [False, True])
async def test_progress_reaches_the_client_that_asked_for_it(
    mode: Literal["auto", "legacy"], era: Literal["stateless", "sessions"], eliciting: bool
) -> None:
    # A client that can be asked (elicitation) has its 2026-07-28 calls run apart, so that one
    # may pause: their progress reaches it all the same while its request is open.
    told: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, total, message))

    async with media_toolkit(era) as (kit, upstream):
        app = at.adapters.mcp_server(kit, name="front").streamable_http_app()
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as http,
            Client(
                streamable_http_client(f"{BASE}/mcp", http_client=http),
                mode=mode,
                elicitation_callback=never_asked if eliciting else None,  # type: ignore[arg-type]
            ) as sdk,
        ):
            done = await sdk.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            quiet = await sdk.call_tool("test_tool_with_progress", {})
    assert done.structured_content == quiet.structured_content == {"result": "done"}
    assert told == [(0, 100, "step 0"), (50, 100, "step 50"), (100, 100, "step 100")]
    began = any(message.get("method") == "initialize" for message in upstream.messages)
    assert began is (era == "sessions")
    # None asked, none kept: the source asks the server for progress only for the first call.
    asked, unasked = upstream.calls()
    assert isinstance(asked["_meta"], dict)
    assert "progressToken" in asked["_meta"]
    assert "progressToken" not in unasked.get("_meta", {})  # type: ignore[operator]


async def test_a_session_tells_its_host_each_progress_with_the_tool_name() -> None:
    told: list[tuple[str, at.Progress]] = []
    async with (
        media_toolkit() as (kit, _),
        at.Session(kit, approve=lambda n, i: True, on_progress=lambda *p: told.append(p)) as s,
    ):
        assert await s.call("test_tool_with_progress", {}) == {"result": "done"}
    assert told == [
        ("test_tool_with_progress", at.Progress(progress=p, total=100.0, message=f"step {p}"))
        for p in (0, 50, 100)
    ]


def everything() -> tuple[Path, Path] | None:
    prefix = Path(os.environ.get("CONFORMANCE_PREFIX", ROOT / ".conformance" / "mcp"))
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), "x64"
    )
    node = prefix / "node_modules" / f"node-linux-{arch}" / "bin" / "node"
    index = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    if node.exists() and (index / "index.js").exists():
        return node, index / "index.js"
    if os.environ.get("AMENDS_REQUIRE_EVERYTHING"):
        pytest.fail(f"server-everything is not installed under {prefix}")
    return None


async def test_the_front_proxies_server_everything_media_and_progress() -> None:
    found = everything()
    if found is None:
        pytest.skip("server-everything is not installed (conformance/mcp/run.sh installs it)")
    node, index = found
    program = ROOT / "conformance" / "mcp" / "front.py"
    process = await anyio.open_process(
        [sys.executable, str(program), "everything", str(node), str(index)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    told: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        told.append(progress)

    try:
        assert process.stdout is not None
        with anyio.fail_after(60):
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        url = line.decode().split()[1]
        async with Client(streamable_http_client(url)) as sdk:
            names = [tool.name for tool in (await sdk.list_tools()).tools]
            image = await sdk.call_tool("get-tiny-image", {})
            blob = await sdk.call_tool("get-resource-reference", {"resourceType": "Blob"})
            long = await sdk.call_tool(
                "trigger-long-running-operation",
                {"duration": 1, "steps": 3},
                progress_callback=on_progress,
            )
    finally:
        process.terminate()
        with anyio.fail_after(20):
            await process.wait()
        assert process.stdout is not None
        await process.stdout.aclose()
    # Task-only tools cannot be called by the source: they are not offered.
    assert "simulate-research-query" not in names
    assert "get-tiny-image" in names
    assert [block.type for block in image.content] == ["text", "image", "text"]
    assert isinstance(image.content[1], ImageContent)
    assert image.content[1].mime_type == "image/png"
    assert any(
        isinstance(block, EmbeddedResource) and getattr(block.resource, "blob", None)
        for block in blob.content
    )
    assert not long.is_error
    assert told == [1, 2, 3]


ODD: at.JsonValue = [{"type": "text", "text": "a", "annotations": {"priority": "high"}}]


class Odd:
    """A source whose ``odd`` answers blocks the SDK refuses (a priority that is no number)."""

    name = "odd"

    async def discover(self) -> list[at.ToolDefinition]:
        return [at.ToolDefinition(name="odd", description="", input_schema={"type": "object"})]

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        return ODD


async def test_blocks_the_sdk_refuses_are_served_as_their_json() -> None:
    source = Odd()
    kit = at.source_toolkit(source, await source.discover())
    async with Client(at.adapters.mcp_server(kit, name="front").server) as sdk:
        answer = await sdk.call_tool("odd", {})
    assert answer.content == [TextContent(text=json.dumps(ODD))]
