"""An MCP server over HTTP that sends too much, too deep or too slowly parsed must cost only its
own call: every answer is bounded before it is held, and reading it is linear."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

import amends_toolkit as at
from amends_toolkit._json import MAX_DEPTH, JsonObject
from amends_toolkit.protocols.mcp._jsonrpc import MAX_MESSAGE_BYTES
from amends_toolkit.protocols.mcp._sse import SseParser

from .peers import chunked, cpu_seconds, gzip_bomb, head, mcp_peer, peak_memory, result

MiB = 1024 * 1024
# What one bounded answer may cost: the limit, a copy of it and change (tracemalloc counts Python's
# allocations only, so the bound is on what the source holds, not on the process).
BOUNDED = 3 * MAX_MESSAGE_BYTES


async def call_echo(
    url: str, max_answer_bytes: int = MAX_MESSAGE_BYTES, max_depth: int = MAX_DEPTH
) -> object:
    async with httpx.AsyncClient() as client:
        source = at.mcp.http(
            name="peer",
            url=url,
            client=client,
            timeout=30.0,
            max_answer_bytes=max_answer_bytes,
            max_depth=max_depth,
        )
        async with source.lifespan():
            return await source.call("echo", {"text": "hi"})


async def gzip_bomb_reply(request: JsonObject) -> AsyncIterator[bytes]:
    body = gzip_bomb(256 * MiB)
    yield head(
        content_type="application/json",
        content_encoding="gzip",
        content_length=str(len(body)),
    )
    for start in range(0, len(body), 65536):
        yield body[start : start + 65536]


@pytest.mark.anyio
async def test_a_gzip_bomb_is_refused_at_the_limit_without_being_inflated_whole() -> None:
    async with mcp_peer(gzip_bomb_reply) as url:
        with peak_memory() as peak, pytest.raises(at.CallFailedError, match="Ask for less"):
            await call_echo(url)
    assert peak[0] < BOUNDED


async def endless_result(request: JsonObject) -> AsyncIterator[bytes]:
    yield head(content_type="application/json", transfer_encoding="chunked")
    start = f'{{"jsonrpc":"2.0","id":{json.dumps(request["id"])},"result":{{"content":['
    yield chunked(start.encode())
    block = b'{"type":"text","text":"' + b"x" * 65536 + b'"},'
    for _ in range(2048):  # 128 MiB, unless the client stops reading
        yield chunked(block)


@pytest.mark.anyio
async def test_a_huge_json_answer_is_a_failed_call_telling_the_model_to_ask_for_less() -> None:
    async with mcp_peer(endless_result) as url:
        with peak_memory() as peak, pytest.raises(at.CallFailedError, match="Ask for less"):
            await call_echo(url)
    assert peak[0] < BOUNDED


@pytest.mark.anyio
async def test_the_answer_limit_is_an_option() -> None:
    async def small(request: JsonObject) -> AsyncIterator[bytes]:
        yield result(request, {"content": [{"type": "text", "text": "x" * 2000}]})

    async with mcp_peer(small) as url:
        assert await call_echo(url, max_answer_bytes=4000) == [{"type": "text", "text": "x" * 2000}]
        with pytest.raises(at.CallFailedError, match="longer than 1000 bytes"):
            await call_echo(url, max_answer_bytes=1000)


async def endless_event_line(request: JsonObject) -> AsyncIterator[bytes]:
    yield head(content_type="text/event-stream", transfer_encoding="chunked")
    yield chunked(b"event: message\ndata: ")
    for _ in range(2048):  # one line of 128 MiB, unless the client stops reading
        yield chunked(b"x" * 65536)


@pytest.mark.anyio
async def test_an_endless_event_stream_line_is_refused_at_the_limit() -> None:
    async with mcp_peer(endless_event_line) as url:
        with peak_memory() as peak, pytest.raises(at.CallFailedError, match="Ask for less"):
            await call_echo(url)
    assert peak[0] < BOUNDED


async def many_data_lines(request: JsonObject) -> AsyncIterator[bytes]:
    yield head(content_type="text/event-stream", transfer_encoding="chunked")
    for _ in range(2048):  # one event of 128 MiB in lines of 64 KiB
        yield chunked(b"data: " + b"x" * 65536 + b"\n")


@pytest.mark.anyio
async def test_an_endless_event_of_short_lines_is_refused_at_the_limit() -> None:
    async with mcp_peer(many_data_lines) as url:
        with peak_memory() as peak, pytest.raises(at.CallFailedError, match="Ask for less"):
            await call_echo(url)
    assert peak[0] < BOUNDED


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [200, 100_000])
async def test_a_deeply_nested_answer_is_an_invalid_response_not_a_defect(depth: int) -> None:
    async def deep(request: JsonObject) -> AsyncIterator[bytes]:
        body = (
            f'{{"jsonrpc":"2.0","id":{json.dumps(request["id"])},"result":'
            f'{{"structuredContent":{{"a":{nested(depth)}}},"content":[]}}}}'
        ).encode()
        yield head(content_type="application/json", content_length=str(len(body))) + body

    async with mcp_peer(deep) as url:
        with pytest.raises(at.InvalidResponseError):
            await call_echo(url)


@pytest.mark.anyio
async def test_the_depth_limit_is_an_option() -> None:
    async def deep(request: JsonObject) -> AsyncIterator[bytes]:
        yield result(request, {"structuredContent": {"a": [[[[]]]]}, "content": []})

    async with mcp_peer(deep) as url:
        assert await call_echo(url) == {"a": [[[[]]]]}
        with pytest.raises(at.InvalidResponseError):
            await call_echo(url, max_depth=4)


@pytest.mark.anyio
async def test_nan_from_a_server_is_no_json() -> None:
    async def nan(request: JsonObject) -> AsyncIterator[bytes]:
        body = (
            f'{{"jsonrpc":"2.0","id":{request["id"]},"result":{{"structuredContent":{{"a":NaN}}}}}}'
        )
        yield head(content_type="application/json", content_length=str(len(body))) + body.encode()

    async with mcp_peer(nan) as url:
        with pytest.raises(at.InvalidResponseError):
            await call_echo(url)


@pytest.mark.anyio
async def test_a_content_coding_that_was_not_asked_for_is_an_invalid_response() -> None:
    async def brotli(request: JsonObject) -> AsyncIterator[bytes]:
        yield head(content_type="application/json", content_encoding="br", content_length="4")
        yield b"\x00\x01\x02\x03"

    async with mcp_peer(brotli) as url:
        with pytest.raises(at.InvalidResponseError):
            await call_echo(url)


def parse_event(line: int) -> None:
    """Parse one event whose data line is ``line`` bytes, fed 4 KiB at a time."""
    chunk = b"x" * 4096
    parser = SseParser(max_event_bytes=64 * MiB)
    parser.feed(b"data: ")
    for _ in range(line // len(chunk)):
        parser.feed(chunk)
    (event,) = parser.feed(b"\n\n")
    assert len(event.data) == line


def test_parsing_an_event_stream_is_linear_in_a_lines_length() -> None:
    small = cpu_seconds(lambda: parse_event(2 * MiB))
    large = cpu_seconds(lambda: parse_event(16 * MiB))
    # Linear: eight times the bytes, about eight times the time; quadratic would be 64 times.
    assert large / small < 20


@pytest.mark.anyio
@pytest.mark.parametrize("claimed", ["1073741824", "9" * 30])
async def test_a_content_length_longer_than_the_body_costs_only_what_was_sent(claimed: str) -> None:
    async def lying(request: JsonObject) -> AsyncIterator[bytes]:
        start = f'{{"jsonrpc":"2.0","id":{json.dumps(request["id"])},"result":{{"content":[]}}'
        yield head(content_type="application/json", content_length=claimed) + start.encode()

    async with mcp_peer(lying) as url:
        with peak_memory() as peak, pytest.raises(at.UnavailableError):
            await call_echo(url)
    assert peak[0] < BOUNDED


@pytest.mark.anyio
async def test_an_answer_with_endless_headers_is_refused_before_they_are_held() -> None:
    async def endless_headers(request: JsonObject) -> AsyncIterator[bytes]:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        for index in range(16 * 1024):  # 16 MiB of headers, unless the client stops reading
            yield f"X-Pad-{index}: {'x' * 1000}\r\n".encode()

    async with mcp_peer(endless_headers) as url:
        with peak_memory() as peak, pytest.raises(at.UnavailableError):
            await call_echo(url)
    assert peak[0] < BOUNDED
