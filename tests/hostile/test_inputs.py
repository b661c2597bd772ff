"""What a model gives is checked before any peer sees it: an input nested too deep, or holding
NaN or Infinity, is an ``InvalidInputError`` failure from every door (the toolkit, a session, an
adapter, the MCP front, a source called directly), never an exception, and no request is sent."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

import amends_toolkit as at

from .peers import head, http_peer, mcp_peer

pytestmark = pytest.mark.anyio

SCHEMA: at.JsonObject = {
    "type": "object",
    "properties": {"value": {}, "count": {"type": "integer"}},
    "additionalProperties": False,
}
DEEP = 300  # past what jsonschema-rs can check (255)
PEER = str(Path(__file__).parent / "stdio_peer.py")  # its tool answers "ok" to any object


def nested(depth: int) -> at.JsonValue:
    value: at.JsonValue = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def ok(_t: str, _h: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
    yield head(content_type="application/json", content_length="2") + b"{}"


def api(url: str, client: httpx.AsyncClient, *, max_depth: int = 128) -> at.http.HttpSource:
    operation = at.http.Operation(
        definition=at.ToolDefinition(name="put", description="Put a value.", input_schema=SCHEMA),
        request=at.http.RequestTemplate(method="POST", path="/values", body="value"),
    )
    return at.http.make(
        name="api", base_url=url, operations=[operation], client=client, max_depth=max_depth
    )


def refused(value: at.JsonValue, *words: str) -> None:
    failure = at.Failure.from_json(value)
    assert failure is not None, value
    assert failure.code == "InvalidInputError"
    for word in words:
        assert word in failure.message


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (nested(DEEP), ("nests more than 128 levels",)),
        ({"a": nested(DEEP)}, ("nests more than",)),
        (float("nan"), ("NaN or Infinity",)),
        ([1.0, float("inf")], ("NaN or Infinity",)),
        (-float("inf"), ("NaN or Infinity",)),
        ({1: "a key a host gave that is no string"}, ("not a string",)),
        ({"a", "set"}, ("JSON has not",)),
    ],
)
async def test_the_toolkit_and_a_session_refuse_such_input_before_any_request(
    value: at.JsonValue, words: tuple[str, ...]
) -> None:
    async with http_peer(ok) as (url, bodies), httpx.AsyncClient() as client:
        toolkit = at.source_toolkit(source := api(url, client), await source.discover())
        result = await toolkit.invoke("put", {"value": value})
        refused(result.value, *words)
        async with at.Session(toolkit, approve=lambda _n, _i: True) as session:
            refused(await session.call("put", {"value": value}), *words)
        assert bodies == []
        assert await toolkit.call("put", {"value": nested(20)}) == {}
        assert len(bodies) == 1


@contextlib.asynccontextmanager
async def recording() -> AsyncIterator[
    tuple[str, str, httpx.AsyncClient, at.Runtime, list[object]]
]:
    """An MCP peer and an API on loopback, a client and a runtime; ``sent`` holds every tool
    call the MCP peer was sent and every body the API was sent (neither should be)."""
    sent: list[object] = []

    async def answer(request: at.JsonObject) -> AsyncIterator[bytes]:
        sent.append(json.dumps(request))
        yield head(500, content_length="0")

    async with (
        mcp_peer(answer) as url,
        http_peer(ok) as (base, bodies),
        httpx.AsyncClient() as client,
        at.Runtime() as runtime,
    ):
        yield url, base, client, runtime, sent
        sent.extend(bodies)


async def test_a_source_called_directly_refuses_such_input_before_any_request() -> None:
    async with recording() as (url, base, client, _, sent):
        mcp = at.mcp.http(name="mcp", url=url, client=client)
        rest = api(base, client)
        for value in (float("nan"), nested(DEEP)):
            with pytest.raises(at.InvalidInputError):
                await mcp.call("echo", {"text": value})
            with pytest.raises(at.InvalidInputError):
                await rest.call("put", {"value": value})
    assert sent == []


async def test_through_a_toolkit_an_input_no_peer_may_be_sent_is_refused() -> None:
    # The toolkit's check and the source's own, over an actor (inline or not) as bare.
    async with recording() as (url, base, client, runtime, sent):
        mcp = at.mcp.http(name="mcp", url=url, client=client)
        sources: list[at.ToolSource] = [
            mcp,
            api(base, client),
            await runtime.spawn(at.mcp.http(name="inline", url=url, client=client)),
            await runtime.spawn(api(base, client), inline=False),
        ]
        async with mcp.lifespan():
            for source in sources:
                toolkit = at.source_toolkit(source, await source.discover())
                tool = next(iter(toolkit.tools))
                for value in (float("nan"), nested(DEEP)):
                    refused(await toolkit.call(tool, {"value": value}))
    assert sent == []


async def test_a_source_whose_depth_is_below_the_toolkits_walks_a_checked_input_again() -> None:
    async with recording() as (url, base, client, runtime, sent):
        sources: list[at.ToolSource] = [
            api(base, client, max_depth=8),
            await runtime.spawn(at.mcp.http(name="mcp", url=url, client=client, max_depth=8)),
            await runtime.spawn(
                at.mcp.stdio(name="peer", command=sys.executable, args=(PEER,), max_depth=8)
            ),
        ]
        for source in sources:
            toolkit = at.source_toolkit(source, await source.discover())
            tool = next(iter(toolkit.tools))
            value = nested(20)  # within the toolkit's 128 levels
            refused(await toolkit.call(tool, {"value": value}), "more than 8")
    assert sent == []


async def test_arguments_text_nested_100_000_deep_is_one_failure_of_its_batch() -> None:
    async with http_peer(ok) as (url, bodies), httpx.AsyncClient() as client:
        toolkit = at.source_toolkit(source := api(url, client), await source.discover())
        deep = "[" * 100_000 + "]" * 100_000
        calls = [
            {"id": "a", "type": "function", "function": {"name": "put", "arguments": deep}},
            {"id": "b", "type": "function", "function": {"name": "put", "arguments": "{}"}},
            {
                "id": "c",
                "type": "function",
                "function": {"name": "put", "arguments": '{"value": NaN}'},
            },
        ]
        answers = await at.adapters.run_openai_tool_calls(toolkit, calls)
    first, second, third = (json.loads(str(answer["content"])) for answer in answers)
    refused(first, "nests more than")
    assert second == {}
    refused(third, "NaN")
    assert len(bodies) == 1


async def test_the_mcp_front_answers_deep_input_as_a_tool_error_not_an_internal_error() -> None:
    async with http_peer(ok) as (url, bodies), httpx.AsyncClient() as client:
        toolkit = at.source_toolkit(source := api(url, client), await source.discover())
        front = at.adapters.mcp_server(toolkit, name="front")
        async with Client(front.server) as sdk:
            answer = await sdk.call_tool("put", {"value": nested(200)})
    assert answer.is_error is True
    assert "nests more than" in json.dumps(answer.model_dump(mode="json"))
    assert bodies == []


async def test_a_validation_message_echoing_a_huge_input_is_cut_to_the_one_limit() -> None:
    async with http_peer(ok) as (url, bodies), httpx.AsyncClient() as client:
        toolkit = at.source_toolkit(source := api(url, client), await source.discover())
        huge = "x" * (50 * 1024 * 1024)
        failure = at.Failure.from_json(await toolkit.call("put", {"count": huge, "extra": huge}))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert len(failure.message) <= 500
    # What it says of the value is kept, around the cut echo.
    assert "is not of type" in failure.message
    assert "extra" in failure.message
    assert bodies == []
