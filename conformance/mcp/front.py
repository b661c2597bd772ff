"""The server the official MCP conformance suite's server scenarios run against: our MCP front.

``python front.py media`` serves, on 127.0.0.1 at a free port, ``at.adapters.mcp_server`` over
a toolkit of one ``at.mcp.http`` source, itself over an MCP server of the official SDK (on
another free port) that has the tools the suite's content and progress scenarios call
(``test_image_content``, ``test_audio_content``, ``test_embedded_resource``,
``test_multiple_content_types``, ``test_tool_with_progress``). ``python front.py everything NODE
INDEX_JS`` serves the front over the reference server ``@modelcontextprotocol/server-everything``
(started with NODE on a free port, over Streamable HTTP) instead. Either prints ``URL <url>``
on stdout when it serves, and serves until it is sent SIGTERM or SIGINT.

So what a client of the front reads went all the way through: the SDK's server, our source's
parsing, the runtime, the toolkit, the front's rendering and the SDK's server again.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

import anyio
import httpx
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context  # noqa: TC002 - the SDK reads the annotation
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

import amends_toolkit as at

if TYPE_CHECKING:
    from starlette.types import ASGIApp

# A 1x1 red PNG and a tiny WAV (44-byte header, one silent sample), as the scenarios suggest.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
        "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + bytes.fromhex("100000000100010044ac00008858010002001000")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()


def media_server() -> MCPServer:
    """An SDK server with the tools of the suite's content and progress scenarios."""
    server = MCPServer("media")

    @server.tool(structured_output=False)
    def test_image_content() -> list[ImageContent]:
        """A red pixel."""
        return [ImageContent(data=PNG, mime_type="image/png")]

    @server.tool(structured_output=False)
    def test_audio_content() -> list[AudioContent]:
        """A moment of silence."""
        return [AudioContent(data=WAV, mime_type="audio/wav")]

    @server.tool(structured_output=False)
    def test_embedded_resource() -> list[EmbeddedResource]:
        """A text resource."""
        resource = TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return [EmbeddedResource(resource=resource)]

    @server.tool(structured_output=False)
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Text, an image and a binary resource."""
        blob = BlobResourceContents(
            uri="test://mixed-content-resource", mime_type="image/png", blob=PNG
        )
        return [
            TextContent(text="Multiple content types test:"),
            ImageContent(data=PNG, mime_type="image/png"),
            EmbeddedResource(resource=blob),
        ]

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress three times, then answers."""
        for step in (0, 50, 100):
            await ctx.report_progress(step, 100, f"step {step}")
            await anyio.sleep(0.05)
        return "done"

    return server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def serve(app: ASGIApp, port: int, *, task_status: anyio.abc.TaskStatus[None]) -> None:
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await anyio.sleep(0.02)
        task_status.started()


async def wait_until_listening(port: int) -> None:
    while True:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            await anyio.sleep(0.1)
        else:
            await stream.aclose()
            return


async def main(argv: list[str]) -> None:
    upstream_port = free_port()
    process: subprocess.Popen[bytes] | None = None
    async with anyio.create_task_group() as tasks:
        if argv[:1] == ["media"]:
            app = media_server().streamable_http_app(stateless_http=False)
            await tasks.start(serve, app, upstream_port)
        elif argv[:1] == ["everything"] and len(argv) == 3:
            env = {**os.environ, "PORT": str(upstream_port)}
            process = subprocess.Popen(  # noqa: ASYNC220 - started once, ended below
                [argv[1], argv[2], "streamableHttp"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            with anyio.fail_after(30.0):
                await wait_until_listening(upstream_port)
        else:
            raise SystemExit("usage: front.py media | front.py everything NODE INDEX_JS")
        try:
            async with (
                httpx.AsyncClient() as client,
                at.Runtime() as runtime,
            ):
                source = await runtime.spawn(
                    at.mcp.http(
                        name="upstream", url=f"http://127.0.0.1:{upstream_port}/mcp", client=client
                    )
                )
                toolkit = at.source_toolkit(source, await source.discover())
                front = at.adapters.mcp_server(toolkit, name="front", approve=lambda n, i: True)
                port = free_port()
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    await tasks.start(serve, front.streamable_http_app(), port)
                    print(f"URL http://127.0.0.1:{port}/mcp", flush=True)
                    async for _ in signals:
                        break
        finally:
            if process is not None:
                process.terminate()
                process.wait(5)
            tasks.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
