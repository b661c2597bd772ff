"""The MCP HTTP source against scripted servers: what real servers never send.

Each test scripts an ``httpx.MockTransport`` that records the requests the source sends.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import cast

import anyio
import httpx
import httpx2
import pytest

import amends_toolkit as at
from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit.actors._mcp import McpHttpSource

URL = "http://127.0.0.1:9/mcp"
DISCOVERED: JsonObject = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "private",
}
ECHO: JsonObject = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}

Handler = Callable[[JsonObject, httpx.Request], Awaitable[httpx.Response] | httpx.Response]


def result(body: JsonObject, value: JsonObject, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"jsonrpc": "2.0", "id": body["id"], "result": value})


def error(
    body: JsonObject, code: int, message: str = "no", status: int = 200, data: JsonValue = None
) -> httpx.Response:
    err: JsonObject = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return httpx.Response(status, json={"jsonrpc": "2.0", "id": body["id"], "error": err})


def sse(*frames: str, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status,
        headers={"content-type": "text/event-stream", **(headers or {})},
        content="".join(frames).encode(),
    )


def message(value: JsonObject) -> str:
    return f"event: message\r\ndata: {json.dumps(value)}\r\n\r\n"


class Server:
    """A scripted MCP endpoint: ``handlers`` by method, every request recorded."""

    def __init__(self, handlers: dict[str, Handler], *, modern: bool = True) -> None:
        self.handlers = handlers
        self.requests: list[tuple[httpx.Request, JsonObject | None]] = []
        if modern:
            handlers.setdefault("server/discover", lambda body, _: result(body, DISCOVERED))
        handlers.setdefault("tools/list", lambda body, _: result(body, {"tools": [ECHO]}))

    def methods(self) -> list[str]:
        return [
            f"{request.method} {body.get('method', 'response') if body else ''}".strip()
            for request, body in self.requests
        ]

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        body = cast(JsonObject, json.loads(request.content)) if request.content else None
        self.requests.append((request, body))
        key = request.method if body is None else str(body.get("method", "response"))
        handler = self.handlers.get(key)
        if handler is None:
            return httpx.Response(202)
        answer = handler(body or {}, request)
        if not isinstance(answer, httpx.Response):
            answer = await answer
        return answer


def source(server: Server, timeout: float = 60.0) -> tuple[McpHttpSource, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    return at.mcp.http(name="s", url=URL, client=client, timeout=timeout), client


def session_server(handlers: dict[str, Handler]) -> Server:
    """A server of sessions: refuses the modern probe, begins sessions ``sid-1``, ``sid-2``..."""
    begun: list[int] = []

    def discover(body: JsonObject, _: httpx.Request) -> httpx.Response:
        return error(body, -32000, "Bad Request: Unsupported protocol version", status=400)

    def initialize(body: JsonObject, _: httpx.Request) -> httpx.Response:
        begun.append(1)
        answer = result(body, {"protocolVersion": "2025-11-25", "capabilities": {}})
        answer.headers["mcp-session-id"] = f"sid-{len(begun)}"
        return answer

    handlers.setdefault("server/discover", discover)
    handlers.setdefault("initialize", initialize)
    return Server(handlers, modern=False)


# Era discovery


@pytest.mark.anyio
async def test_stateless_requests_carry_version_method_name_headers_and_meta() -> None:
    server = Server({"tools/call": lambda body, _: result(body, {"content": []})})
    src, client = source(server)
    async with client, src.lifespan():
        await src.call("é tool", {"text": "x"})
    assert server.methods() == ["POST server/discover", "POST tools/call"]
    for request, body in server.requests:
        assert body is not None
        assert request.headers["mcp-protocol-version"] == "2026-07-28"
        assert request.headers["mcp-method"] == body["method"]
        assert request.headers["accept"] == "application/json, text/event-stream"
        params = cast(JsonObject, body["params"])
        meta = cast(JsonObject, params["_meta"])
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        assert "mcp-session-id" not in request.headers
    assert server.requests[1][0].headers["mcp-name"] == "=?base64?w6kgdG9vbA==?="


@pytest.mark.anyio
async def test_concurrent_first_calls_discover_the_era_once() -> None:
    gate = anyio.Event()

    async def discover(body: JsonObject, _: httpx.Request) -> httpx.Response:
        await gate.wait()
        return result(body, DISCOVERED)

    server = Server(
        {"server/discover": discover, "tools/call": lambda body, _: result(body, {"content": []})}
    )
    src, client = source(server)
    async with client, src.lifespan(), anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(src.call, "echo", {})
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert server.methods().count("POST server/discover") == 1
    assert server.methods().count("POST tools/call") == 5


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda b: error(b, -32601, "Method not found", 200), id="200 -32601"),
        pytest.param(lambda b: error(b, -32600, "Missing session ID", 400), id="400 -32600"),
        pytest.param(lambda b: error(b, -32602, "Invalid params", 400), id="400 -32602"),
        pytest.param(lambda b: error(b, -32000, "Unsupported protocol", 400), id="400 -32000"),
        pytest.param(
            lambda b: httpx.Response(400, json={"error": {"code": "x"}}), id="400 not json-rpc"
        ),
        pytest.param(lambda b: httpx.Response(404), id="404 empty"),
        pytest.param(lambda b: httpx.Response(405), id="405"),
        pytest.param(
            lambda b: error(b, -32022, "old", 400, {"supported": ["2025-06-18"]}),
            id="-32022 legacy only",
        ),
        pytest.param(
            lambda b: result(b, {"supportedVersions": ["2025-11-25"]}), id="result without 2026"
        ),
    ],
)
async def test_a_server_that_does_not_answer_discover_is_spoken_to_in_a_session(
    answer: Callable[[JsonObject], httpx.Response],
) -> None:
    server = session_server(
        {
            "server/discover": lambda body, _: answer(body),
            "tools/call": lambda body, _: result(
                body, {"content": [{"type": "text", "text": "ok"}]}
            ),
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == [{"type": "text", "text": "ok"}]
    assert server.methods() == [
        "POST server/discover",
        "POST initialize",
        "POST notifications/initialized",
        "POST tools/call",
        "DELETE",
    ]
    init = server.requests[1]
    assert "mcp-session-id" not in init[0].headers
    assert cast(JsonObject, cast(JsonObject, init[1])["params"])["protocolVersion"] == "2025-11-25"
    call_request, call_body = server.requests[3]
    assert call_request.headers["mcp-session-id"] == "sid-1"
    assert call_request.headers["mcp-protocol-version"] == "2025-11-25"
    assert "mcp-method" not in call_request.headers
    assert "_meta" not in cast(JsonObject, cast(JsonObject, call_body)["params"])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, at.AuthenticationError),
        (403, at.AuthenticationError),
        (500, at.UnavailableError),
        (503, at.UnavailableError),
        (429, at.UnavailableError),
        (408, at.UnavailableError),
    ],
)
async def test_a_refusal_or_a_failure_of_discover_is_never_a_reason_to_fall_back(
    status: int, reason: type[at.ToolSourceError]
) -> None:
    server = Server(
        {"server/discover": lambda body, _: error(body, -32601, "x", status, None)}, modern=False
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(reason):
            await src.discover()
    assert server.methods() == ["POST server/discover"]


@pytest.mark.anyio
async def test_no_connection_is_unavailable_and_no_fallback() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
        src = at.mcp.http(name="s", url=URL, client=client)
        async with src.lifespan():
            with pytest.raises(at.UnavailableError) as caught:
                await src.discover()
    assert "127.0.0.1" not in caught.value.model_message


@pytest.mark.anyio
async def test_a_32022_naming_2026_is_sent_again_and_stays_stateless() -> None:
    tries: list[int] = []

    def discover(body: JsonObject, _: httpx.Request) -> httpx.Response:
        tries.append(1)
        if len(tries) == 1:
            return error(body, -32022, "Unsupported", 400, {"supported": ["2026-07-28"]})
        return result(body, DISCOVERED)

    server = Server({"server/discover": discover})
    src, client = source(server)
    async with client, src.lifespan():
        await src.discover()
    assert server.methods() == ["POST server/discover", "POST server/discover", "POST tools/list"]


@pytest.mark.anyio
async def test_a_server_of_another_modern_version_only_is_unsupported() -> None:
    server = Server(
        {
            "server/discover": lambda body, _: error(
                body, -32022, "Unsupported", 400, {"supported": ["2027-01-01"]}
            )
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnsupportedError):
            await src.discover()
    assert "initialize" not in " ".join(server.methods())


# Sessions


@pytest.mark.anyio
async def test_a_session_ended_mid_turn_is_begun_again_once_and_the_request_resent() -> None:
    ended = {"sid-1"}

    def call(body: JsonObject, request: httpx.Request) -> httpx.Response:
        if request.headers["mcp-session-id"] in ended:
            return httpx.Response(
                404,
                json={
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
            )
        return result(body, {"content": [], "structuredContent": {"ok": True}})

    server = session_server({"tools/call": call})
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == {"ok": True}
    assert server.methods()[-5:] == [
        "POST tools/call",
        "POST initialize",
        "POST notifications/initialized",
        "POST tools/call",
        "DELETE",
    ]
    assert server.requests[-2][0].headers["mcp-session-id"] == "sid-2"
    assert server.requests[-1][0].headers["mcp-session-id"] == "sid-2"


@pytest.mark.anyio
async def test_a_session_ended_twice_in_one_request_is_unavailable() -> None:
    server = session_server({"tools/call": lambda body, _: httpx.Response(404)})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnavailableError):
            await src.call("echo", {})
    assert server.methods().count("POST initialize") == 2


@pytest.mark.anyio
async def test_a_servers_ping_is_answered_and_other_requests_refused_in_a_session() -> None:
    def call(body: JsonObject, _: httpx.Request) -> httpx.Response:
        return sse(
            ": keep-alive\r\n\r\n",
            message({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
            message(
                {"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}}
            ),
            message(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            ),
            message(
                {
                    "jsonrpc": "2.0",
                    "id": body["id"],
                    "result": {"content": [{"type": "text", "text": "done"}]},
                }
            ),
        )

    server = session_server({"tools/call": call})
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == [{"type": "text", "text": "done"}]
    answers = [body for _, body in server.requests if body is not None and "method" not in body]
    assert answers == [
        {"jsonrpc": "2.0", "id": "p1", "result": {}},
        {"jsonrpc": "2.0", "id": "s1", "error": {"code": -32601, "message": "Method not found"}},
    ]
    assert all(
        request.headers.get("mcp-session-id") == "sid-1"
        for request, body in server.requests
        if body is not None and "method" not in body
    )


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_broken_session_stream_is_resumed_with_get_and_last_event_id_after_retry() -> None:
    resumed_at: list[float] = []
    started: list[float] = []

    def call(body: JsonObject, _: httpx.Request) -> httpx.Response:
        started.append(anyio.current_time())
        return sse("id: ev-1\r\nretry: 2500\r\ndata: \r\n\r\n")

    def get(body: JsonObject, request: httpx.Request) -> httpx.Response:
        resumed_at.append(anyio.current_time())
        assert request.headers["last-event-id"] == "ev-1"
        assert request.headers["mcp-session-id"] == "sid-1"
        assert request.headers["accept"] == "text/event-stream"
        return sse(f"id: ev-2\r\n{message({'jsonrpc': '2.0', 'id': 3, 'result': {'content': []}})}")

    server = session_server({"tools/call": call, "GET": get})
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == []
    assert resumed_at[0] - started[0] >= 2.5


@pytest.mark.anyio
@pytest.mark.both_backends
@pytest.mark.parametrize("asked", [None, "br, gzip", "gzip"])
@pytest.mark.parametrize("modern", [True, False])
async def test_only_the_codings_the_source_reads_are_asked_for(
    asked: str | None, modern: bool
) -> None:
    # Whatever the client asks for by itself (its default is gzip and deflate), every POST and
    # a resumed stream's GET ask for gzip and deflate, once (a DELETE reads no body).
    def call(body: JsonObject, _: httpx.Request) -> httpx.Response:
        if modern:
            return result(body, {"content": []})
        return sse("id: ev-1\r\nretry: 0\r\ndata: \r\n\r\n")

    def get(body: JsonObject, request: httpx.Request) -> httpx.Response:
        return sse(f"id: ev-2\r\n{message({'jsonrpc': '2.0', 'id': 3, 'result': {'content': []}})}")

    handlers: dict[str, Handler] = {"tools/call": call, "GET": get}
    server = Server(handlers) if modern else session_server(handlers)
    client = httpx.AsyncClient(
        transport=httpx.MockTransport(server),
        headers={} if asked is None else {"Accept-Encoding": asked},
    )
    src = at.mcp.http(name="s", url=URL, client=client, timeout=60.0)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == []
    assert "GET" in server.methods() or modern
    for request, _ in server.requests:
        if request.method != "DELETE":
            assert request.headers.get_list("accept-encoding") == ["gzip, deflate"]


@pytest.mark.anyio
async def test_a_stateless_stream_that_ends_without_the_answer_is_unavailable() -> None:
    server = Server(
        {
            "tools/call": lambda body, _: sse(
                "id: 1\r\ndata: \r\n\r\n",
                message({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            )
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnavailableError):
            await src.call("echo", {})
    assert "GET" not in server.methods()


@pytest.mark.anyio
async def test_the_session_is_ended_with_delete_when_the_lifespan_ends() -> None:
    server = session_server({"tools/call": lambda body, _: result(body, {"content": []})})
    src, client = source(server)
    assert isinstance(src, at.runtime.Lifespan)
    async with client:
        async with src.lifespan():
            await src.call("echo", {})
        deletes = [request for request, _ in server.requests if request.method == "DELETE"]
        assert [request.headers["mcp-session-id"] for request in deletes] == ["sid-1"]
        async with src.lifespan():
            pass
        assert [request.method for request, _ in server.requests].count("DELETE") == 1


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_ending_the_session_is_bounded_and_runs_when_cancelled() -> None:
    async def never(body: JsonObject, _: httpx.Request) -> httpx.Response:
        await anyio.sleep_forever()
        raise AssertionError

    server = session_server(
        {"tools/call": lambda body, _: result(body, {"content": []}), "DELETE": never}
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    src = at.mcp.http(name="s", url=URL, client=client, end_timeout=3.0)
    async with client:
        with anyio.CancelScope() as scope:
            async with src.lifespan():
                await src.call("echo", {})
                scope.cancel()
                cancelled_at = anyio.current_time()
                await anyio.sleep(1)
        # The DELETE is never answered: the lifespan waited end_timeout for it, not longer.
        assert anyio.current_time() - cancelled_at == pytest.approx(3.0)
    assert "DELETE" in server.methods()


# Responses


@pytest.mark.anyio
async def test_sse_with_other_messages_comments_and_cr_framing_is_read() -> None:
    def call(body: JsonObject, _: httpx.Request) -> httpx.Response:
        value = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": body["id"],
                "result": {"content": [], "structuredContent": {"a": 1}},
            }
        )
        return sse(
            ": ping\r\r",
            "event: message\rdata: "
            + json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
            + "\r\r",
            "event: other\ndata: {not json\n\n",
            message({"jsonrpc": "2.0", "id": 999, "result": {}}),
            "event: message\ndata: " + value[:10] + "\ndata: " + value[10:] + "\n\n",
        )

    server = Server({"tools/call": call})
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {}) == {"a": 1}


@pytest.mark.anyio
async def test_tools_are_listed_over_every_page_by_cursor() -> None:
    pages = {None: (["a", "b"], ""), "": (["c"], "p3"), "p3": (["d"], None)}
    cursors: list[JsonValue] = []

    def tools(body: JsonObject, _: httpx.Request) -> httpx.Response:
        cursor = cast(JsonObject, body["params"]).get("cursor")
        cursors.append(cursor)
        names, following = pages[cast(str | None, cursor)]
        page: JsonObject = {
            "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]
        }
        if following is not None:
            page["nextCursor"] = following
        return result(body, page)

    src, client = source(Server({"tools/list": tools}))
    async with client, src.lifespan():
        assert [d.name for d in await src.discover()] == ["a", "b", "c", "d"]
    assert cursors == [None, "", "p3"]


@pytest.mark.anyio
async def test_a_cursor_given_twice_is_an_invalid_response() -> None:
    server = Server(
        {"tools/list": lambda body, _: result(body, {"tools": [], "nextCursor": "same"})}
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.InvalidResponseError):
            await src.discover()


@pytest.mark.anyio
async def test_a_retry_after_date_is_gmt_whatever_the_machines_zone(machine_zone: str) -> None:
    # The asctime form names no zone; HTTP says it is GMT all the same.
    when = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(time.time() + 119))
    server = Server(
        {
            "tools/call": lambda body, _: httpx.Response(
                503, headers={"retry-after": when}, text="busy"
            )
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnavailableError) as caught:
            await src.call("echo", {})
    assert caught.value.retry_after is not None
    assert 110 <= caught.value.retry_after <= 119


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "reason", "retry_after"),
    [
        (401, at.AuthenticationError, None),
        (403, at.AuthenticationError, None),
        (404, at.InvalidResponseError, None),
        (405, at.UnsupportedError, None),
        (406, at.UnsupportedError, None),
        (408, at.UnavailableError, None),
        (409, at.InvalidResponseError, None),
        (415, at.UnsupportedError, None),
        (429, at.UnavailableError, 7.0),
        (500, at.UnavailableError, None),
        (502, at.UnavailableError, None),
        (503, at.UnavailableError, 7.0),
        (302, at.InvalidResponseError, None),
        (202, at.InvalidResponseError, None),
    ],
)
async def test_every_status_of_a_call_is_a_reason(
    status: int, reason: type[at.ToolSourceError], retry_after: float | None
) -> None:
    server = Server(
        {
            "tools/call": lambda body, _: httpx.Response(
                status, headers={"retry-after": "7"}, text="nope"
            )
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(reason) as caught:
            await src.call("echo", {})
    assert type(caught.value) is reason
    if retry_after is not None:
        assert cast(at.UnavailableError, caught.value).retry_after == retry_after
    assert "127.0.0.1" not in caught.value.model_message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("code", "message", "reason"),
    [
        (-32602, "Unknown tool: echo", at.NotFoundError),
        (-32602, "text must be a string", at.InvalidInputError),
        (-32601, "Method not found", at.UnsupportedError),
        (-32021, "needs tasks", at.UnsupportedError),
        (-32022, "Unsupported protocol version", at.UnsupportedError),
        (-32042, "URL elicitation required", at.UnsupportedError),
        (-32002, "not found", at.NotFoundError),
        (-32700, "Parse error", at.InvalidResponseError),
        (-32600, "Invalid request", at.InvalidResponseError),
        (-32603, "Internal error", at.UnavailableError),
        (-32000, "tool exploded", at.CallFailedError),
    ],
)
async def test_every_error_code_of_a_call_is_a_reason(
    code: int, message: str, reason: type[at.ToolSourceError]
) -> None:
    server = Server(
        {"tools/call": lambda body, _: error(body, code, message, 400 if code != -32000 else 200)}
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(reason) as caught:
            await src.call("echo", {})
    assert type(caught.value) is reason
    if reason in (at.InvalidInputError, at.CallFailedError):
        assert caught.value.model_message == message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(
            httpx.Response(200, headers={"content-type": "application/json"}, content=b"<html>"),
            id="not json",
        ),
        pytest.param(httpx.Response(200, json=[1, 2]), id="not json-rpc"),
        pytest.param(
            httpx.Response(200, json={"jsonrpc": "2.0", "id": 77, "result": {}}), id="another id"
        ),
        pytest.param(httpx.Response(200, text="hello"), id="text/plain"),
        pytest.param(sse("data: {garbage\n\n"), id="sse garbage"),
        pytest.param(
            httpx.Response(200, json={"jsonrpc": "2.0", "id": 2, "result": {"content": "x"}}),
            id="content not a list",
        ),
        pytest.param(
            httpx.Response(
                200,
                json={"jsonrpc": "2.0", "id": 2, "result": {"content": [], "resultType": "task"}},
            ),
            id="unknown resultType",
        ),
    ],
)
async def test_garbage_bodies_are_invalid_responses(answer: httpx.Response) -> None:
    server = Server({"tools/call": lambda body, _: answer})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.InvalidResponseError):
            await src.call("echo", {})


@pytest.mark.anyio
async def test_a_tools_list_that_is_garbage_is_an_invalid_response() -> None:
    server = Server({"tools/list": lambda body, _: result(body, {"tools": "many"})})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.InvalidResponseError):
            await src.discover()


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_server_that_never_answers_is_unavailable_after_the_timeout() -> None:
    async def never(body: JsonObject, _: httpx.Request) -> httpx.Response:
        await anyio.sleep_forever()
        raise AssertionError

    server = Server({"tools/call": never})
    src, client = source(server, timeout=30.0)
    async with client, src.lifespan():
        before = anyio.current_time()
        with pytest.raises(at.UnavailableError):
            await src.call("echo", {})
        assert anyio.current_time() - before == pytest.approx(30.0)


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_server_trickling_keep_alive_comments_cannot_extend_a_call_past_its_timeout() -> (
    None
):
    # Each comment comes well within the read timeout, so only the call's own deadline ends it;
    # the stream would end (without the answer) only after 100 comments, at 1000 seconds.
    async def comments() -> AsyncIterator[bytes]:
        for _ in range(100):
            await anyio.sleep(10)
            yield b": keep-alive\r\n\r\n"

    server = Server(
        {
            "tools/call": lambda body, _: httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=comments()
            )
        }
    )
    src, client = source(server, timeout=30.0)
    async with client, src.lifespan():
        before = anyio.current_time()
        with pytest.raises(
            at.UnavailableError, match=r"no answer within the source\'s timeout of 30 seconds"
        ):
            await src.call("echo", {})
        assert anyio.current_time() - before == pytest.approx(30.0)


# Results


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"content": [{"type": "text", "text": "t"}], "structuredContent": {"x": 1}}, {"x": 1}),
        (
            {"content": [{"type": "text", "text": "t"}], "structuredContent": None},
            [{"type": "text", "text": "t"}],
        ),
        (
            {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
            [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        ),
        ({"content": [], "structuredContent": [1, 2], "resultType": "complete"}, [1, 2]),
    ],
)
async def test_a_result_is_structured_content_when_present_else_the_blocks(
    value: JsonObject, expected: JsonValue
) -> None:
    src, client = source(Server({"tools/call": lambda body, _: result(body, value)}))
    async with client, src.lifespan():
        assert await src.call("echo", {}) == expected


@pytest.mark.anyio
async def test_is_error_is_a_failed_call_with_the_tools_text() -> None:
    value: JsonObject = {
        "isError": True,
        "content": [
            {"type": "text", "text": "no such city"},
            {"type": "image", "data": "", "mimeType": "x"},
        ],
    }
    src, client = source(Server({"tools/call": lambda body, _: result(body, value)}))
    async with client, src.lifespan():
        with pytest.raises(at.CallFailedError) as caught:
            await src.call("echo", {})
    assert caught.value.model_message == "no such city"


@pytest.mark.anyio
async def test_input_required_that_asks_for_input_is_unsupported() -> None:
    value: JsonObject = {
        "resultType": "input_required",
        "inputRequests": {"a": {"method": "elicitation/create", "params": {}}},
        "requestState": "s",
    }
    server = Server({"tools/call": lambda body, _: result(body, value)})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnsupportedError):
            await src.call("echo", {})
    assert server.methods().count("POST tools/call") == 1


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_input_required_with_only_request_state_is_resent_with_it() -> None:
    def call(body: JsonObject, _: httpx.Request) -> httpx.Response:
        state = cast(JsonObject, body["params"]).get("requestState")
        if state == "s2":
            return result(body, {"content": [{"type": "text", "text": "done"}]})
        return result(
            body, {"resultType": "input_required", "requestState": "s1" if state is None else "s2"}
        )

    server = Server({"tools/call": call})
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("echo", {"text": "x"}) == [{"type": "text", "text": "done"}]
    calls = [body for _, body in server.requests if body and body["method"] == "tools/call"]
    assert [cast(JsonObject, b["params"]).get("requestState") for b in calls] == [None, "s1", "s2"]
    assert len({b["id"] for b in calls}) == 3
    assert all(cast(JsonObject, b["params"])["arguments"] == {"text": "x"} for b in calls)


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_input_required_resent_without_end_is_unsupported() -> None:
    server = Server(
        {
            "tools/call": lambda body, _: result(
                body, {"resultType": "input_required", "requestState": "again"}
            )
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.UnsupportedError):
            await src.call("echo", {})
    assert server.methods().count("POST tools/call") == 11


@pytest.mark.anyio
async def test_hints_are_carried_and_left_out_when_absent() -> None:
    tools: list[JsonValue] = [
        {
            "name": "a",
            "title": "A",
            "description": "d",
            "inputSchema": {"type": "object"},
            "annotations": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        {"name": "b", "inputSchema": {"type": "object"}, "annotations": {"title": "Bee"}},
        {"name": "c", "inputSchema": {"type": "object"}},
    ]
    src, client = source(Server({"tools/list": lambda body, _: result(body, {"tools": tools})}))
    async with client, src.lifespan():
        a, b, c = await src.discover()
    assert a.annotations == at.Annotations(
        title="A", read_only=True, destructive=False, idempotent=True, open_world=False
    )
    assert a.description == "d"
    assert b.annotations == at.Annotations(title="Bee")
    assert c.annotations == at.Annotations()
    assert cast(JsonObject, at.catalog.dump(c)).get("annotations", {}) == {}


# x-mcp-header


MARKED: JsonObject = {
    "name": "route",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "on": {"type": "boolean", "x-mcp-header": "On"},
            "nested": {
                "type": "object",
                "properties": {"deep": {"type": "string", "x-mcp-header": "Deep"}},
            },
            "q": {"type": "string"},
        },
    },
}


@pytest.mark.anyio
async def test_marked_parameters_are_sent_as_mcp_param_headers_after_listing() -> None:
    server = Server(
        {
            "tools/list": lambda body, _: result(body, {"tools": [MARKED]}),
            "tools/call": lambda body, _: result(body, {"content": []}),
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        await src.discover()
        await src.call(
            "route",
            {"region": "Hello, 世界", "n": 42.0, "on": False, "nested": {"deep": " x"}, "q": "y"},
        )
        await src.call("route", {"region": None, "q": "y"})
    first, second = (r for r, b in server.requests if b and b["method"] == "tools/call")
    assert first.headers["mcp-param-region"] == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert first.headers["mcp-param-n"] == "42"
    assert first.headers["mcp-param-on"] == "false"
    assert first.headers["mcp-param-deep"] == "=?base64?IHg=?="
    assert "mcp-param-q" not in first.headers
    assert not [h for h in second.headers if h.startswith("mcp-param-")]


def _header_mismatch(body: JsonObject, request: httpx.Request) -> httpx.Response:
    if (
        "mcp-param-region" not in request.headers
        and cast(JsonObject, cast(JsonObject, body["params"])["arguments"]).get("region")
        is not None
    ):
        return error(body, -32020, "Mcp-Param-Region header is missing", 400)
    return result(
        body, {"content": [], "structuredContent": {"region": request.headers["mcp-param-region"]}}
    )


@pytest.mark.anyio
async def test_a_source_that_has_not_listed_sends_no_marks_and_on_32020_lists_and_resends_once() -> (
    None
):
    server = Server(
        {
            "tools/list": lambda body, _: result(body, {"tools": [MARKED]}),
            "tools/call": _header_mismatch,
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        assert await src.call("route", {"region": "eu"}) == {"region": "eu"}
    assert server.methods() == [
        "POST server/discover",
        "POST tools/call",
        "POST tools/list",
        "POST tools/call",
    ]


@pytest.mark.anyio
async def test_a_32020_with_the_same_headers_is_not_resent() -> None:
    server = Server({"tools/call": lambda body, _: error(body, -32020, "Header mismatch", 400)})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.InvalidResponseError):
            await src.call("echo", {})
    assert server.methods() == ["POST server/discover", "POST tools/call", "POST tools/list"]


@pytest.mark.anyio
async def test_a_tool_gone_from_the_listing_after_32020_is_not_found() -> None:
    server = Server({"tools/call": lambda body, _: error(body, -32020, "Header mismatch", 400)})
    src, client = source(server)
    async with client, src.lifespan():
        with pytest.raises(at.NotFoundError):
            await src.call("gone", {})


INVALID_MARKS = {
    "number": {"type": "number", "x-mcp-header": "N"},
    "object": {"type": "object", "x-mcp-header": "O"},
    "array": {"type": "array", "x-mcp-header": "A"},
    "no type": {"x-mcp-header": "T"},
    "nullable": {"type": ["string", "null"], "x-mcp-header": "T"},
    "empty": {"type": "string", "x-mcp-header": ""},
    "space": {"type": "string", "x-mcp-header": "a b"},
    "colon": {"type": "string", "x-mcp-header": "a:b"},
    "non ascii": {"type": "string", "x-mcp-header": "ré"},
    "control": {"type": "string", "x-mcp-header": "a\x01"},
    "not a string": {"type": "string", "x-mcp-header": 3},
}


@pytest.mark.anyio
@pytest.mark.parametrize("prop", list(INVALID_MARKS.values()), ids=list(INVALID_MARKS))
async def test_a_tool_with_an_invalid_mark_is_left_out_of_discover_with_a_warning(
    prop: JsonObject, caplog: pytest.LogCaptureFixture
) -> None:
    bad: JsonObject = {"name": "bad", "inputSchema": {"type": "object", "properties": {"p": prop}}}
    server = Server({"tools/list": lambda body, _: result(body, {"tools": [bad, ECHO]})})
    src, client = source(server)
    caplog.set_level(logging.WARNING)
    async with client, src.lifespan():
        assert [d.name for d in await src.discover()] == ["echo"]
        with pytest.raises(at.NotFoundError):
            await src.call("bad", {})
    [record] = [r for r in caplog.records if r.getMessage() == "mcp.tool_rejected"]
    assert record.levelno == logging.WARNING
    assert record.__dict__["tool"] == "bad"
    assert "p" in record.__dict__["reason"]
    assert server.methods().count("POST tools/call") == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"},
            },
        },
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}
            },
        },
        {
            "type": "object",
            "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "X"}}}],
        },
        {"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "X"}}},
        {"type": "object", "x-mcp-header": "Root"},
    ],
    ids=["duplicate", "under items", "under anyOf", "under $defs", "on the root"],
)
async def test_marks_out_of_reach_or_repeated_make_the_tool_invalid(schema: JsonObject) -> None:
    bad: JsonObject = {"name": "bad", "inputSchema": schema}
    src, client = source(Server({"tools/list": lambda body, _: result(body, {"tools": [bad]})}))
    async with client, src.lifespan():
        assert await src.discover() == []


@pytest.mark.anyio
async def test_a_session_lists_marked_tools_as_they_are_and_sends_no_marks() -> None:
    bad: JsonObject = {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"p": {"type": "number", "x-mcp-header": "N"}},
        },
    }
    server = session_server(
        {
            "tools/list": lambda body, _: result(body, {"tools": [bad, MARKED]}),
            "tools/call": lambda body, _: result(body, {"content": []}),
        }
    )
    src, client = source(server)
    async with client, src.lifespan():
        assert [d.name for d in await src.discover()] == ["bad", "route"]
        await src.call("route", {"region": "eu"})
    call = next(r for r, b in server.requests if b and b.get("method") == "tools/call")
    assert "mcp-param-region" not in call.headers


# Building


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"name": ""}, ValueError),
        ({"url": "ftp://x/mcp"}, ValueError),
        ({"url": "/mcp"}, ValueError),
        ({"url": "http://127.0.0.1:port/mcp"}, ValueError),
        ({"timeout": 0}, ValueError),
        ({"timeout": float("nan")}, ValueError),
        ({"client": object()}, TypeError),
    ],
)
def test_a_bad_option_is_refused_at_build_time(
    kwargs: dict[str, object], problem: type[Exception]
) -> None:
    options: dict[str, object] = {
        "name": "s",
        "url": URL,
        "client": httpx.AsyncClient(),
        "timeout": 60.0,
    }
    options.update(kwargs)
    with pytest.raises(problem):
        at.mcp.http(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("module", [httpx, httpx2])
@pytest.mark.parametrize("url", ["http://127.0.0.1:port/mcp", "http://127.0.0.1/mcp\udcff"])
def test_a_url_the_client_cannot_send_to_is_refused_naming_the_url(
    module: ModuleType, url: str
) -> None:
    with pytest.raises(ValueError, match=r"^url is not a URL the client can send to"):
        at.mcp.http(name="s", url=url, client=module.AsyncClient())


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_a_url_query_the_clients_params_would_change_is_refused(module: ModuleType) -> None:
    # With params of its own, a client replaces a URL's query: the source gives it again as
    # params, decoded and encoded anew. A query whose escapes are no UTF-8 (%FF, a signature's
    # raw bytes) would go as U+FFFD's bytes: another value, so it is refused, naming the URL.
    url = "http://127.0.0.1/mcp?sig=%FF%FEab"
    with pytest.raises(ValueError, match=r"^url's query is not UTF-8"):
        at.mcp.http(name="s", url=url, client=module.AsyncClient(params={"k": "v"}))
    # without params of its own, the client sends the query as written
    at.mcp.http(name="s", url=url, client=module.AsyncClient())
