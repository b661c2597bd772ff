"""The host's client as the HTTP-speaking sources take it: a sync client is refused when the source
is built, with the fix; a request that does not reach the server tells the host where it went
and why (a refused connection, a name that does not resolve), never the model; and an MCP
endpoint that is not there (a 404 on ``initialize``) is a wrong url, not a retryable outage; a
library client's requests are sent without its ``stream`` generator, and closed all the same.

The network is real: a port bound on 127.0.0.1 that does not listen refuses, and a name under
``.invalid`` (RFC 2606) never resolves, without any packet leaving the machine.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import httpx2
import pytest
from mcp.server import MCPServer

import amends_toolkit as at
from amends_toolkit.actors._mcp import McpHttpSource
from amends_toolkit.protocols.http import network_failure, where

Build = Callable[[str, object], at.ToolSource]

SOURCES: dict[str, Build] = {
    "mcp": lambda url, client: at.mcp.http(name="tasks", url=url, client=client),  # type: ignore[arg-type]
    "http": lambda url, client: at.http.make(
        name="tasks",
        base_url=url,
        operations=[
            at.http.Operation(
                definition=at.ToolDefinition(
                    name="list_tasks", description="List.", input_schema={"type": "object"}
                ),
                request=at.http.RequestTemplate(method="GET", path="/tasks"),
            )
        ],
        client=client,  # type: ignore[arg-type]
    ),
}


async def first_call(source: at.ToolSource) -> object:
    if isinstance(source, at.http.HttpSource):
        return await source.call("list_tasks", {})
    assert isinstance(source, McpHttpSource)
    async with source.lifespan():
        return await source.call("echo", {})


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that is bound but does not listen: connecting to it is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize(("client", "module"), [(httpx.Client, "httpx"), (httpx2.Client, "httpx2")])
def test_a_sync_client_is_refused_when_the_source_is_built(
    kind: str, client: Callable[[], object], module: str
) -> None:
    sync = client()
    try:
        with pytest.raises(TypeError) as caught:
            SOURCES[kind]("https://api.example.com/mcp", sync)
    finally:
        sync.close()  # type: ignore[attr-defined]
    assert str(caught.value) == (
        f"client is a sync {module}.Client, which would block: give an httpx.AsyncClient (or an "
        "httpx2.AsyncClient), as in `async with httpx.AsyncClient(headers=...) as client:`"
    )


@pytest.mark.parametrize("kind", SOURCES)
def test_what_is_no_client_is_refused_naming_what_it_is(kind: str) -> None:
    with pytest.raises(TypeError, match=r"not dict: give an httpx\.AsyncClient"):
        SOURCES[kind]("https://api.example.com/mcp", {"Authorization": "Bearer x"})


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", SOURCES)
async def test_a_refused_connection_names_the_address_to_the_host_only(
    kind: str, refusing_port: int
) -> None:
    url = f"http://127.0.0.1:{refusing_port}/mcp"
    async with httpx.AsyncClient() as client:
        with pytest.raises(at.UnavailableError) as caught:
            await first_call(SOURCES[kind](url, client))
    method = "POST" if kind == "mcp" else "GET"
    assert caught.value.message.endswith(
        f"{method} {url} failed: ConnectError: "
        "the connection was refused (nothing listens at that address)"
    )
    assert str(refusing_port) not in caught.value.model_message


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SOURCES)
async def test_a_name_that_does_not_resolve_is_said_so_to_the_host_only(kind: str) -> None:
    url = "http://nonexistent.invalid/mcp"
    async with httpx.AsyncClient() as client:
        with pytest.raises(at.UnavailableError) as caught:
            await first_call(SOURCES[kind](url, client))
    assert f" {url} failed: ConnectError: the host name could not be resolved (" in str(
        caught.value
    )
    assert "invalid" not in caught.value.model_message


def test_an_address_is_told_without_its_user_or_query() -> None:
    assert where("https://user:secret@api.example.com:8443/v1/mcp?key=k#x") == (
        "https://api.example.com:8443/v1/mcp"
    )
    assert where("http://[::1]:9/mcp") == "http://[::1]:9/mcp"
    assert network_failure("GET", "https://api.example.com/v1?key=k", ValueError("boom")) == (
        "GET https://api.example.com/v1 failed: ValueError: boom"
    )


@pytest.mark.anyio
async def test_an_mcp_url_that_is_not_there_is_a_mistake_not_an_outage() -> None:
    app = MCPServer("tasks").streamable_http_app()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        source = at.mcp.http(name="tasks", url="http://127.0.0.1:8000/mpc", client=client)
        with pytest.raises(at.ToolSourceError) as caught:
            async with source.lifespan():
                await source.discover()
    error = caught.value
    assert isinstance(error, at.InvalidResponseError)
    assert not error.retryable
    assert error.message == (
        "initialize was answered with HTTP 404: "
        "there is no MCP endpoint at the source's url; check it"
    )
    assert error.to_failure().to_json() == {
        "isFailure": True,
        "code": "InvalidResponseError",
        "message": "The tool source gave an answer that could not be read.",
        "retryable": False,
    }


class _Recorded(httpx.AsyncByteStream):
    """A response body that records whether it was closed."""

    def __init__(self, closed: list[bool]) -> None:
        self._closed = closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"a": 1}'

    async def aclose(self) -> None:
        self._closed.append(True)
