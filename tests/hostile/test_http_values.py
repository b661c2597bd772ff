"""A model's values against a real Starlette app under uvicorn on 127.0.0.1: a path value stays
one segment of its operation's path however a server decodes it, so it never reaches an
operation the policy blocks, and no value changes the request's origin or framing.

uvicorn decodes ``%2F`` in the path before Starlette routes (``/items/1%2Fsecret`` runs
``/items/{id}/secret``); the other values here stay in their segment on uvicorn but not on a
stack that decodes again (a proxy before the app), reads ``\\`` as ``/`` (IIS, WHATWG URL
parsers) or resolves dot segments (nginx, Tomcat).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import attrs
import httpx
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import amends_toolkit as at
from amends_toolkit.protocols.http import MAX_PATH_VALUE_LENGTH
from cli.gateway import GatewayProcess


@attrs.frozen
class Seen:
    """A request as the app routed it: the handler that ran, its path parameter and the rest."""

    handler: str
    id: str | None
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]


def recording_app(seen: list[Seen]) -> Starlette:
    """``/items/{id}``, ``/items/{id}/secret`` and every other path, each call recorded."""

    def handler(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            seen.append(
                Seen(
                    handler=name,
                    id=request.path_params.get("id"),
                    path=request.scope["path"],
                    query=list(request.query_params.multi_items()),
                    headers=dict(request.headers),
                )
            )
            return JSONResponse({"handler": name, "the secret": name == "secret"})

        return handle

    return Starlette(
        routes=[
            Route("/items/{id}", handler("item")),
            Route("/items/{id}/secret", handler("secret")),
            Route("/{rest:path}", handler("other")),
        ]
    )


@contextmanager
def serving(seen: list[Seen]) -> Iterator[str]:
    """The app under uvicorn on 127.0.0.1:0; yields its ``host:port``."""
    config = uvicorn.Config(
        recording_app(seen), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    # uvicorn offers no callback for "listening"; its flag is the documented way to wait.
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@attrs.frozen
class Upstream:
    """The API (``seen``, at ``host``) and another server a value might aim at (``elsewhere``)."""

    host: str
    seen: list[Seen]
    other_host: str
    elsewhere: list[Seen]


@pytest.fixture(scope="module")
def servers() -> Iterator[Upstream]:
    seen: list[Seen] = []
    elsewhere: list[Seen] = []
    with serving(seen) as host, serving(elsewhere) as other_host:
        yield Upstream(host=host, seen=seen, other_host=other_host, elsewhere=elsewhere)


@pytest.fixture
def upstream(servers: Upstream) -> Upstream:
    servers.seen.clear()
    servers.elsewhere.clear()
    return servers


def document(style: str, explode: bool) -> at.JsonObject:
    """The allowed ``getItem`` and the blocked ``getSecret``, their ``id`` in ``style``."""

    def get(operation_id: str) -> at.JsonObject:
        return {
            "get": {
                "operationId": operation_id,
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "style": style,
                        "explode": explode,
                        "schema": {},
                    }
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }

    return {
        "openapi": "3.1.0",
        "info": {"title": "items", "version": "1"},
        "paths": {"/items/{id}": get("getItem"), "/items/{id}/secret": get("getSecret")},
    }


def hand_written() -> list[at.http.Operation]:
    def operation(name: str, path: str) -> at.http.Operation:
        return at.http.Operation(
            definition=at.ToolDefinition(name=name, description=name, input_schema={}),
            request=at.http.RequestTemplate(
                method="GET",
                path=path,
                params={
                    "id": at.http.Param(location="path", name="id"),
                    "q": at.http.Param(location="query", name="q"),
                    "trace": at.http.Param(location="header", name="X-Trace"),
                },
            ),
        )

    return [operation("getItem", "/items/{id}"), operation("getSecret", "/items/{id}/secret")]


@asynccontextmanager
async def toolkit(
    upstream: Upstream, operations: list[at.http.Operation]
) -> AsyncIterator[at.Toolkit]:
    """The operations under a policy that blocks ``getSecret``, as a gateway assembles them."""
    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        source = at.http.make(
            name="api", base_url=f"http://{upstream.host}", operations=operations, client=client
        )
        ref = await runtime.spawn(source)
        yield at.assemble(
            [at.Member(ref, await ref.discover())],
            lambda _source, d: "block" if d.name == "getSecret" else "allow",
        )


# What would leave the segment: '/' and '\' as they are, a dot segment, '?' and '#', each
# percent-encoded (either case), encoded twice, as IIS's %u, and in full-width forms; and an
# escape four times over, deeper than any server decodes.
LEAVING = [
    "1%25252541",
    "1/secret",
    "1\\secret",
    "1%2Fsecret",
    "1%2fsecret",
    "1%252Fsecret",
    "1%25252fsecret",
    "1%5Csecret",
    "1%5csecret",
    "1%255Csecret",
    "1%u002Fsecret",
    "1\uff0fsecret",
    "1%EF%BC%8Fsecret",
    "%2e%2e",
    "%2E",
    ".%2e",
    "%252e%252e",
    "..%00",
    ".. ",
    "\u2025",
    "\uff0e\uff0e",
    "1?x=1",
    "1#x",
    "1%3Fx=1",
    "1%23x",
    "1%253F",
    "//other",
    "http://other.host/",
]


@pytest.mark.anyio
@pytest.mark.parametrize("value", LEAVING)
async def test_a_path_value_that_would_leave_its_segment_is_refused_before_any_request(
    upstream: Upstream, value: str
) -> None:
    async with toolkit(upstream, hand_written()) as tools:
        assert "api__getSecret" not in tools.tools
        failure = at.Failure.from_json(await tools.call("api__getItem", {"id": value}))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert "'id' is one segment of the path" in failure.message
    assert value not in failure.message
    assert upstream.seen == []


@pytest.fixture
def gateway(upstream: Upstream, tmp_path: Path) -> Iterator[GatewayProcess]:
    """``amends-toolkit serve`` over the app's OpenAPI document, ``getSecret`` blocked."""
    (tmp_path / "items.json").write_text(json.dumps(document("simple", False)))
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "items"
openapi = "items.json"
base_url = "http://{upstream.host}"

[policy]
allow = ["items__getItem"]
block = ["items__getSecret"]

[auth]
type = "none"
"""
    )
    process = GatewayProcess(config)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


@pytest.mark.anyio
async def test_through_the_gateway_a_client_cannot_reach_the_blocked_operation_by_a_path_value(
    upstream: Upstream, gateway: GatewayProcess
) -> None:
    async with Client(gateway.wait_ready(), cache=None) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == {"items__getItem"}
        refused = await client.call_tool("items__getItem", {"id": "1/secret"})
        assert upstream.seen == []
        answered = await client.call_tool("items__getItem", {"id": "1"})
    assert refused.is_error
    (block,) = refused.content
    assert isinstance(block, types.TextContent)
    assert "'id' is one segment of the path" in block.text
    assert "1/secret" not in block.text
    assert not answered.is_error
    assert [(seen.handler, seen.id) for seen in upstream.seen] == [("item", "1")]


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["%25" * 1_000_000 + "2F", "\uff41" * 4_000_000])
async def test_a_path_value_of_megabytes_is_refused_before_it_is_decoded(
    upstream: Upstream, value: str
) -> None:
    async with toolkit(upstream, hand_written()) as tools:
        failure = at.Failure.from_json(await tools.call("api__getItem", {"id": value}))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert f"at most {MAX_PATH_VALUE_LENGTH} characters" in failure.message
    assert upstream.seen == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("style", "explode", "value"),
    [
        ("simple", False, "1/secret"),
        ("simple", False, ["1", "x/secret"]),
        ("simple", True, {"a": "1/secret"}),
        ("simple", True, {"a/secret": "1"}),
        ("label", False, "1/secret"),
        ("label", True, ["1", "%2e%2e"]),
        ("matrix", False, "1/secret"),
        ("matrix", True, ["1", "1%2Fsecret"]),
        ("matrix", True, {"a": "1\\secret"}),
    ],
)
async def test_no_style_of_a_read_path_parameter_reaches_the_blocked_operation(
    upstream: Upstream, style: str, explode: bool, value: at.JsonValue
) -> None:
    read = at.openapi.read_operations(document(style, explode))
    assert read.skipped == ()
    async with toolkit(upstream, list(read.operations)) as tools:
        failure = at.Failure.from_json(await tools.call("api__getItem", {"id": value}))
        assert failure is not None
        assert failure.code == "InvalidInputError"
        assert upstream.seen == []
        # The same operation takes a value that stays in its segment.
        assert await tools.call("api__getItem", {"id": "1"}) == {
            "handler": "item",
            "the secret": False,
        }
    assert [seen.handler for seen in upstream.seen] == ["item"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "value", ["a b é", "a..b", "...", "100%", "50%25", "%252541", "1.5", "@x", "a:b"]
)
async def test_a_path_value_that_stays_in_its_segment_arrives_as_given(
    upstream: Upstream, value: str
) -> None:
    async with toolkit(upstream, hand_written()) as tools:
        assert await tools.call("api__getItem", {"id": value}) == {
            "handler": "item",
            "the secret": False,
        }
    (seen,) = upstream.seen
    assert (seen.handler, seen.id) == ("item", value)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "value",
    [
        "http://{other}/",
        "//{other}/x",
        "@{other}",
        "x@{other}:80",
        "{other}",
        "a&q=b",
        "a#b",
        "1\r\nHost: {other}",
        "1%0d%0aHost:%20{other}",
        "1\r\n\r\nGET /items/1/secret HTTP/1.1",
    ],
)
async def test_a_query_value_changes_neither_the_origin_nor_the_framing(
    upstream: Upstream, value: str
) -> None:
    value = value.format(other=upstream.other_host)
    async with toolkit(upstream, hand_written()) as tools:
        await tools.call("api__getItem", {"id": "1", "q": value})
    (seen,) = upstream.seen
    assert (seen.handler, seen.id, seen.query) == ("item", "1", [("q", value)])
    assert seen.headers["host"] == upstream.host
    assert upstream.elsewhere == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "value", ["http://{other}/", "{other}", "x, {other}", "//{other}", "1%0d%0aHost:%20{other}"]
)
async def test_a_header_value_naming_a_host_is_only_that_headers_value(
    upstream: Upstream, value: str
) -> None:
    value = value.format(other=upstream.other_host)
    async with toolkit(upstream, hand_written()) as tools:
        await tools.call("api__getItem", {"id": "1", "trace": value})
    (seen,) = upstream.seen
    assert (seen.handler, seen.headers["x-trace"]) == ("item", value)
    assert seen.headers["host"] == upstream.host
    assert upstream.elsewhere == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "value", ["1\r\nHost: {other}", "1\nX-Evil: 1", "1\r\n\r\nGET / HTTP/1.1", "\x00", " 1"]
)
async def test_a_header_value_that_would_add_a_header_or_a_request_is_refused(
    upstream: Upstream, value: str
) -> None:
    value = value.format(other=upstream.other_host)
    async with toolkit(upstream, hand_written()) as tools:
        failure = at.Failure.from_json(
            await tools.call("api__getItem", {"id": "1", "trace": value})
        )
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert upstream.seen == []
    assert upstream.elsewhere == []
