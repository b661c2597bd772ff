"""Attacks on how the HTTP-speaking sources send and read (a library client's request sent
without its ``stream`` generator, the redaction's read of a request that remembers values, a body
read without a generator), over a server on loopback: a credential the host's client adds each
time anew (a rotating ``auth``, a subclass's or an instance's own ``send``), or put on a first
request a redirect to another origin leaves behind, never reaches the model, an answer the source leaves early (too long) gives its connection back, and a
``stream`` the host sets on its client or the library's class is the one used."""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
import httpx
import pytest

import amends_toolkit as at

from .peers import echo_all, head, http_peer, json_reply, mcp_echo_reply

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

GET = at.http.Operation(
    definition=at.ToolDefinition(name="get", description="Get.", input_schema={"type": "object"}),
    request=at.http.RequestTemplate(method="GET", path="/thing"),
)


class _Rotating(httpx.Auth):
    """A token new on every request (as a signing scheme's), in a header and in the query."""

    def __init__(self) -> None:
        self.given: list[str] = []

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = f"rt-live-{len(self.given):04d}-9f8e7d6c"
        self.given.append(token)
        request.headers["Authorization"] = f"Bearer {token}"
        request.headers["X-Sig"] = token[::-1]
        request.url = request.url.copy_add_param("nonce", token.upper())
        yield request


def given(auth: _Rotating) -> list[str]:
    return [form for token in auth.given for form in (token, token[::-1], token.upper())]


@asynccontextmanager
async def moving(url: str) -> AsyncIterator[str]:
    """A server of another origin sending every request on to ``url`` (307), with the
    ``Authorization`` it got moved into the new target's query."""

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        token = headers.get("authorization", "").rpartition(" ")[2]
        where = f"{url}{target}{'&' if '?' in target else '?'}moved={token}"
        yield head(307, location=where, content_length="0")

    async with http_peer(reply) as (front, _):
        yield front


async def api_echoes(
    http: httpx.AsyncClient,
    calls: int,
    built: Callable[[], object] = lambda: None,
    *,
    moved: bool = False,
) -> list[str]:
    """What the model reads of ``calls`` calls of an API source echoing all it was sent (sent
    there by a redirect from another origin when ``moved``)."""

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield json_reply({"echo": echo_all(target, headers, decoded=False)})

    async with http_peer(reply) as (url, _), moving(url) if moved else nullcontext(url) as url:
        source = at.http.make(name="api", base_url=url, operations=[GET], client=http)
        built()
        toolkit = at.source_toolkit(source, await source.discover())
        return [json.dumps(await toolkit.call("get", {})) for _ in range(calls)]


async def mcp_echoes(
    http: httpx.AsyncClient,
    calls: int,
    built: Callable[[], object] = lambda: None,
    *,
    moved: bool = False,
) -> list[str]:
    """The same over an MCP server (stateless, 2026 era) whose tool echoes all it was sent."""

    reply = mcp_echo_reply(functools.partial(echo_all, decoded=False))

    async with http_peer(reply) as (url, _), moving(url) if moved else nullcontext(url) as url:
        source = at.mcp.http(name="echoing", url=url + "/mcp", client=http)
        built()
        async with source.lifespan():
            await source.discover()
            return [json.dumps(await source.call("echo", {})) for _ in range(calls)]


ECHOES = {"api": api_echoes, "mcp": mcp_echoes}


@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_a_token_the_clients_auth_makes_anew_for_each_request_is_never_shown(
    kind: str,
) -> None:
    # The redaction remembers the source's values and the client's plain headers between
    # requests: a value new on every request must still be read on each one.
    auth = _Rotating()
    async with httpx.AsyncClient(auth=auth) as http:
        texts = await ECHOES[kind](http, 3)
    assert len(auth.given) >= 3
    for text in texts:
        assert "authorization=[redacted]" in text
        for secret in given(auth):
            assert secret not in text


class _Signing(httpx.AsyncClient):
    """A host's client that signs in its own ``send`` (no ``auth``, no hook)."""

    async def send(self, request: httpx.Request, **options: Any) -> httpx.Response:
        request.headers["X-Signed"] = "sg-live-subclass-1a2b3c"
        return await super().send(request, **options)


@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_what_a_clients_own_send_adds_is_never_shown(kind: str) -> None:
    # A subclass's send (the source keeps the client's stream), and a send set on the instance
    # after the source is built (the source sends through it all the same).
    async with _Signing() as signing:
        (text,) = await ECHOES[kind](signing, 1)
    assert "x-signed=[redacted]" in text
    assert "sg-live-subclass-1a2b3c" not in text

    async with httpx.AsyncClient() as http:
        library_send = http.send

        async def send(request: httpx.Request, **options: Any) -> httpx.Response:
            request.headers["X-Signed"] = "sg-live-instance-4d5e6f"
            return await library_send(request, **options)

        (text,) = await ECHOES[kind](http, 1, lambda: setattr(http, "send", send))
    assert "x-signed=[redacted]" in text
    assert "sg-live-instance-4d5e6f" not in text


def in_flight(http: httpx.AsyncClient) -> int:
    """Requests the client's pool still holds a connection for (a response not closed)."""
    pool = http._transport._pool  # type: ignore[attr-defined]
    return len(pool._requests) + sum(
        1 for connection in pool.connections if not (connection.is_idle() or connection.is_closed())
    )


# On trio, httpx's own async generators under ``aiter_raw`` (left at a break, as they are by
# ``client.stream`` too) are finalized unexhausted: trio warns, on the code before this too.
@pytest.mark.filterwarnings("ignore:Async generator .* garbage collected:ResourceWarning")
@pytest.mark.parametrize("coding", ["identity", "gzip"])
async def test_an_answer_too_long_gives_its_connection_back(coding: str) -> None:
    # The source stops reading at its limit (a bomb inflated no further): the response is
    # closed, and the next call finds a connection, with the client allowed only one.
    body = json.dumps({"pad": "x" * 4_000_000}).encode()
    sent = gzip.compress(body) if coding == "gzip" else body

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield head(
            content_type="application/json", content_encoding=coding, content_length=str(len(sent))
        )
        for start in range(0, len(sent), 65536):
            yield sent[start : start + 65536]

    limits = httpx.Limits(max_connections=1)
    async with http_peer(reply) as (url, _), httpx.AsyncClient(limits=limits) as http:
        source = at.http.make(
            name="api", base_url=url, operations=[GET], client=http, max_answer_length=100_000
        )
        toolkit = at.source_toolkit(source, await source.discover())
        for _ in range(3):
            answer = await toolkit.call("get", {})
            assert "longer than 100000 characters" in json.dumps(answer)
            assert in_flight(http) == 0


@pytest.mark.parametrize("kind", ["api", "mcp"])
@pytest.mark.parametrize("where", ["instance", "class"])
@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_stream_the_host_sets_on_its_client_is_used(
    kind: str, where: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The source sends a library client's request without its stream generator, but a stream
    # the host wraps (a recorder, a signer), on the client or on the library's class, before or
    # after building the source, is still the one used.
    used: list[str] = []
    library = httpx.AsyncClient.stream

    def recorded(client: httpx.AsyncClient, method: str, *args: Any, **options: Any) -> Any:
        used.append(method)
        return library(client, method, *args, **options)

    def wrap() -> None:
        if where == "instance":
            monkeypatch.setattr(http, "stream", lambda *a, **k: recorded(http, *a, **k))
        else:
            monkeypatch.setattr(httpx.AsyncClient, "stream", recorded)

    async with httpx.AsyncClient() as http:
        if when == "before":
            wrap()
        await ECHOES[kind](http, 1, wrap if when == "after" else lambda: None)
    assert used


class _Streaming(httpx.AsyncClient):
    """A host's client that signs in its own ``stream``."""

    def stream(self, method: str, url: Any, **options: Any) -> Any:
        options["headers"] = {**dict(options.get("headers") or {}), "X-Signed": "sg-live-st-7a8b9c"}
        return super().stream(method, url, **options)


@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_a_client_that_signs_in_its_own_stream_is_sent_through_it(kind: str) -> None:
    async with _Streaming() as http:
        (text,) = await ECHOES[kind](http, 1)
    assert "x-signed=[redacted]" in text
    assert "sg-live-st-7a8b9c" not in text


class _Bearer(httpx.Auth):
    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = "Bearer sk-live-moved-2c4e6a8b"
        yield request


@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_a_token_a_redirect_moves_to_another_origin_is_never_shown(kind: str) -> None:
    # The client's auth runs once, on the first request; a redirect to another origin drops
    # its Authorization, and the server there may get the token another way (here in its
    # query): the first request's headers are the client's too.
    async with httpx.AsyncClient(auth=_Bearer(), follow_redirects=True) as http:
        (text,) = await ECHOES[kind](http, 1, moved=True)
    assert "moved=[redacted]" in text
    assert "sk-live-moved-2c4e6a8b" not in text


@pytest.mark.virtual_clock
@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_a_deadline_mid_body_gives_its_connection_back(kind: str) -> None:
    # The answer's head and part of its body come, then nothing: the call ends at its timeout
    # (the MCP call's deadline now in its own coroutine), and its response is closed.
    async def reply(target: str, headers: dict[str, str], body: bytes) -> AsyncIterator[bytes]:
        request = json.loads(body) if body else {}
        method, id_ = request.get("method"), request.get("id")
        if method == "server/discover":
            yield json_reply({"jsonrpc": "2.0", "id": id_, "result": DISCOVERED})
            return
        if method == "tools/list":
            tools = [{"name": "echo", "inputSchema": {"type": "object"}}]
            yield json_reply({"jsonrpc": "2.0", "id": id_, "result": {"tools": tools}})
            return
        yield head(content_type="text/event-stream" if kind == "mcp" else "application/json")
        yield b"event: message\ndata: {" if kind == "mcp" else b'{"a": "'
        await anyio.sleep(3600)

    async with http_peer(reply) as (url, _), httpx.AsyncClient(timeout=3600) as http:
        if kind == "api":
            source: at.ToolSource = at.http.make(
                name="api", base_url=url, operations=[GET], client=http, timeout=30.0
            )
            toolkit = at.source_toolkit(source, await source.discover())
            before = anyio.current_time()
            answer = json.dumps(await toolkit.call("get", {}))
            assert '"retryable": true' in answer
        else:
            source = at.mcp.http(name="slow", url=url + "/mcp", client=http, timeout=30.0)
            async with source.lifespan():
                await source.discover()
                before = anyio.current_time()
                with pytest.raises(
                    at.UnavailableError,
                    match=r"no answer within the source\'s timeout of 30 seconds",
                ):
                    await source.call("echo", {})
        assert anyio.current_time() - before == pytest.approx(30.0)
        assert in_flight(http) == 0


DISCOVERED = {"supportedVersions": ["2026-07-28"]}


@pytest.mark.parametrize("kind", ["api", "mcp"])
async def test_a_value_a_hook_adds_that_is_no_ascii_is_never_shown(kind: str) -> None:
    # Only the source's ASCII values are compared as bytes: a hook's value beyond ASCII (sent
    # as UTF-8) is decoded as the headers decode it, and found in the answer.
    async def sign(request: httpx.Request) -> None:
        request.headers["X-Key"] = "clé-live-9a8b7c6d"

    async with httpx.AsyncClient(event_hooks={"request": [sign]}) as http:
        texts = await ECHOES[kind](http, 2)
    for text in texts:
        assert "x-key=[redacted]" in text
        assert "9a8b7c6d" not in text
