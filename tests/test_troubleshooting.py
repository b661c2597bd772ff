"""The docs' Troubleshooting page (docs/troubleshooting.md) shows what a host really reads: each message in its code
blocks is made here by the mistake it names, and compared (an object's address, a port and the
system's words for a name that does not resolve aside)."""

from __future__ import annotations

import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.server import MCPServer

import amends_toolkit as at
from amends_toolkit._extras import _CLONE as CLONE
from amends_toolkit.cli import main

PAGE = Path(__file__).parents[1] / "docs" / "troubleshooting.md"
CRASH = (
    "import sys\n"
    "print('files server 1.0 starting', file=sys.stderr)\n"
    "import files_server_dependency\n"
)
LIST_TASKS = {"name": "list_tasks", "description": "List.", "inputSchema": {"type": "object"}}


def hide(monkeypatch: pytest.MonkeyPatch, missing: str, *importers: str) -> None:
    """Make ``missing`` fail to import, as if not installed (see test_extras.py)."""
    for name in [name for name in sys.modules if name.startswith(f"{missing}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)
    for name in importers:
        monkeypatch.delitem(sys.modules, name, raising=False)


def shown() -> list[str]:
    """The messages of the page's code blocks: a line naming an error, with the ``  |`` lines
    that follow it."""
    section = PAGE.read_text()
    messages: list[str] = []
    for block in section.split("```")[1::2]:
        for line in block.strip("\n").splitlines():
            if line.startswith("  | "):
                messages[-1] += "\n" + line
            elif line:
                messages.append(line)
    return messages


def same(message: str) -> str:
    """A message without what differs from one run or machine to another."""
    message = re.sub(r"0x[0-9a-f]+", "0x?", message)
    message = re.sub(r"(http://127\.0\.0\.1):\d+", r"\1:?", message)
    message = re.sub(r"(<ActorRef '\w+') (starting|running)>", r"\1 starting>", message)
    # A process's end reaches a waiting call by its request or by the crash that cut the call
    # short, whichever comes first; both say the same of the process.
    message = message.replace(
        "the source crashed while the call ran: ProcessEnded: ", "tools/list: "
    )
    # The clone an extra is installed from is the reader's own.
    message = message.replace(f"pip install -e '{CLONE}[", "pip install -e './amends-toolkit[")
    return re.sub(r"(could not be resolved) \(.*\)$", r"\1 (?)", message)


def said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@pytest.fixture
def refusing_port() -> Iterator[int]:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


async def stdio_failures() -> list[str]:
    messages = []
    async with at.Runtime() as runtime:
        for command, args in (("mcp-server-files", []), (sys.executable, ["-c", CRASH])):
            source = at.mcp.stdio(name="files", command=command, args=args)
            ref = await runtime.spawn(source, restart=at.Restart(intensity=0))
            with pytest.raises(at.UnavailableError) as caught:
                await ref.discover()
            messages.append(said(caught.value))
    return messages


def sync_client() -> str:
    with httpx.Client() as client, pytest.raises(TypeError) as caught:
        at.mcp.http(name="tasks", url="https://example.com/mcp", client=client)  # type: ignore[arg-type]
    return said(caught.value)


async def plain_data() -> list[str]:
    messages = []
    async with at.Runtime() as runtime, httpx.AsyncClient() as client:
        ref = await runtime.spawn(
            at.mcp.http(name="tasks", url="http://127.0.0.1:1/mcp", client=client)
        )
        with pytest.raises(TypeError) as caught:
            at.Member(ref, [LIST_TASKS])  # type: ignore[list-item]
        messages.append(said(caught.value))
        with pytest.raises(TypeError) as caught:
            at.assemble([ref], lambda source, definition: "allow")  # type: ignore[list-item]
        messages.append(said(caught.value))
    with pytest.raises(at.CatalogError) as loading:
        at.catalog.load(list[at.ToolDefinition], LIST_TASKS)
    messages.append(said(loading.value))
    return messages


async def network_failures(port: int) -> list[str]:
    messages = []
    app = MCPServer("tasks").streamable_http_app()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        source = at.mcp.http(name="tasks", url="http://127.0.0.1:8000/mpc", client=client)
        with pytest.raises(at.ToolSourceError) as caught:
            async with source.lifespan():
                await source.discover()
        messages.append(said(caught.value))
    async with httpx.AsyncClient() as client:
        for url in (f"http://127.0.0.1:{port}/mcp", "https://mcp.example.invalid/mcp"):
            source = at.mcp.http(name="tasks", url=url, client=client)
            with pytest.raises(at.UnavailableError) as caught:
                async with source.lifespan():
                    await source.discover()
            messages.append(said(caught.value))
    return messages


def missing_extras(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    messages = []
    with monkeypatch.context() as patched:
        hide(patched, "mcp_types", "amends_toolkit.adapters.mcp_front")
        with pytest.raises(ModuleNotFoundError) as caught:
            at.adapters.mcp_server(at.assemble([], lambda s, d: "allow"), name="host-tools")
        messages.append(said(caught.value))
    with monkeypatch.context() as patched:
        hide(patched, "yaml")
        with pytest.raises(at.openapi.DocumentError) as unread:
            at.openapi.parse_document("openapi: 3.0.0\n")
        messages.append(said(unread.value))
    with monkeypatch.context() as patched:
        hide(patched, "rich")
        assert main(["serve", "gateway.toml"]) == 1
    messages.extend(capsys.readouterr().err.splitlines())
    return messages


@pytest.mark.anyio
async def test_the_troubleshooting_messages_are_what_a_host_reads(
    refusing_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = [
        *await stdio_failures(),
        sync_client(),
        *await plain_data(),
        *await network_failures(refusing_port),
        *missing_extras(monkeypatch, capsys),
    ]
    hide(monkeypatch, "pydantic_monty")
    with pytest.raises(ModuleNotFoundError) as missing:
        async with at.MontyRuntime():
            pass
    real.append(said(missing.value))
    made = {same(message) for message in real}
    page = shown()
    assert len(page) == 13
    for message in page:
        assert same(message) in made, message
