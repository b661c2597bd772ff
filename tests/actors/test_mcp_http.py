"""The MCP HTTP source against real servers: the official SDK's ``MCPServer`` and ``fastmcp``.

Both serve the stateless 2026-07-28 protocol and sessions on one endpoint; a small middleware
makes a server answer the modern probe as a server of sessions only does (mcp-protocol.md §7.1).
In-process through ``httpx.ASGITransport`` (which buffers whole responses), and under uvicorn on
127.0.0.1 for streaming, cancellation and blocking tools.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Literal, cast
from urllib.parse import urlsplit

import anyio
import attrs
import httpx
import httpx2
import pytest
import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError as FastToolError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import amends_toolkit as at

BASE = "http://127.0.0.1:8000"
Kind = Literal["sdk", "fastmcp"]
Mode = Literal["stateless-json", "stateless-sse", "sessions-sse", "sessions-json"]
MODES: tuple[Mode, ...] = ("stateless-json", "stateless-sse", "sessions-sse", "sessions-json")

cancelled = threading.Event()


def sdk_server() -> MCPServer:
    server = MCPServer("demo")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, title="Echo it"))
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def fail() -> str:
        raise ToolError("the fail tool failed")

    @server.tool()
    def regional(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], q: str
    ) -> dict[str, str]:
        return {"region": region, "q": q}

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("a log line")
        return "said"

    @server.tool()
    async def block() -> str:
        try:
            await anyio.sleep(3600)
        finally:
            cancelled.set()
        return "never"

    return server


def fastmcp_server() -> FastMCP:
    server = FastMCP("demo")

    @server.tool(annotations={"readOnlyHint": True, "title": "Echo it"})
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def fail() -> str:
        raise FastToolError("the fail tool failed")

    @server.tool()
    def regional(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], q: str
    ) -> dict[str, str]:
        return {"region": region, "q": q}

    return server


def build(kind: Kind, mode: Mode) -> tuple[ASGIApp, Starlette]:
    """The ASGI app to send to, and the Starlette app whose lifespan to enter."""
    stateless = mode.startswith("stateless")
    json_response = mode.endswith("json")
    if kind == "sdk":
        app = sdk_server().streamable_http_app(stateless_http=False, json_response=json_response)
    else:
        app = fastmcp_server().http_app(
            path="/mcp", stateless_http=False, json_response=json_response
        )
    return (app if stateless else sessions_only(app)), app


def sessions_only(app: ASGIApp) -> ASGIApp:
    """Answer the 2026-07-28 probe as a server of sessions only (a TS SDK 1.x server's 400)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"mcp-protocol-version") == b"2026-07-28"
        ):
            while (await receive()).get("more_body"):
                pass
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32000,
                        "message": "Bad Request: Unsupported protocol version: 2026-07-28",
                    },
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


class Recorder:
    """Wraps an app and records each request's method, JSON-RPC method and status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, str, int, dict[str, str]]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def reading() -> Message:
            message = await receive()
            chunks.append(message.get("body", b""))
            return message

        headers = {k.decode(): v.decode() for k, v in scope["headers"]}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                try:
                    method = json.loads(b"".join(chunks)).get("method", "response")
                except ValueError:
                    method = ""
                self.seen.append((scope["method"], method, message["status"], headers))
            await send(message)

        await self.app(scope, reading, sending)

    def calls(self) -> list[str]:
        return [f"{verb} {method}".strip() for verb, method, _, _ in self.seen]


@asynccontextmanager
async def served(kind: Kind, mode: Mode) -> AsyncIterator[tuple[httpx.AsyncClient, Recorder]]:
    app, starlette = build(kind, mode)
    recorder = Recorder(app)
    async with (
        starlette.router.lifespan_context(starlette),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=recorder), base_url=BASE) as client,
    ):
        yield client, recorder


PARAMS = [
    pytest.param(kind, mode, id=f"{kind}-{mode}") for kind in ("sdk", "fastmcp") for mode in MODES
]


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "mode"), PARAMS)
async def test_tools_are_listed_with_their_hints_and_run(kind: Kind, mode: Mode) -> None:
    async with served(kind, mode) as (client, recorder):
        source = at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client)
        async with source.lifespan():
            definitions = {d.name: d for d in await source.discover()}
            assert definitions["echo"].annotations == at.Annotations(
                title="Echo it", read_only=True
            )
            assert definitions["echo"].description == "Say it back."
            # fastmcp gives every tool a title of its own.
            assert attrs.evolve(definitions["fail"].annotations, title=None) == at.Annotations()
            assert await source.call("echo", {"text": "hi"}) == {"result": "hi"}
            with pytest.raises(at.CallFailedError) as caught:
                await source.call("fail", {})
            assert caught.value.model_message.endswith("the fail tool failed")
            assert await source.call("regional", {"region": "Hello, 世界", "q": "x"}) == {
                "region": "Hello, 世界",
                "q": "x",
            }
    stateless = mode.startswith("stateless")
    calls = recorder.calls()
    assert calls[0] == "POST server/discover"
    assert ("POST initialize" in calls) is not stateless
    assert ("DELETE" in calls) is not stateless
    for verb, method, status, headers in recorder.seen:
        if stateless:
            assert headers["mcp-protocol-version"] == "2026-07-28"
            assert headers["mcp-method"] == method
            assert "mcp-session-id" not in headers
        elif method not in ("initialize", "server/discover"):
            assert headers["mcp-session-id"]
        assert status < 300 or method == "server/discover", (verb, method, status)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_stateless_call_before_listing_learns_the_marks_from_32020(kind: Kind) -> None:
    async with served(kind, "stateless-json") as (client, recorder):
        source = at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client)
        async with source.lifespan():
            assert await source.call("regional", {"region": " eu ", "q": "x"}) == {
                "region": " eu ",
                "q": "x",
            }
    assert recorder.calls() == [
        "POST server/discover",
        "POST tools/call",
        "POST tools/list",
        "POST tools/call",
    ]
    assert [s for _, _, s, _ in recorder.seen] == [200, 400, 200, 200]
    assert recorder.seen[-1][3]["mcp-param-region"] == "=?base64?IGV1IA==?="


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_session_the_server_ended_is_begun_again(kind: Kind) -> None:
    async with served(kind, "sessions-sse") as (client, recorder):
        source = at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client)
        async with source.lifespan():
            await source.call("echo", {"text": "a"})
            [session] = {h["mcp-session-id"] for _, m, _, h in recorder.seen if m == "tools/call"}
            ended = await client.delete(
                "/mcp", headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            )
            assert ended.status_code == 200
            assert await source.call("echo", {"text": "b"}) == {"result": "b"}
            assert recorder.calls()[-4:] == [
                "POST tools/call",
                "POST initialize",
                "POST notifications/initialized",
                "POST tools/call",
            ]
            assert recorder.seen[-4][2] == 404
            assert recorder.seen[-1][3]["mcp-session-id"] != session


@pytest.mark.anyio
async def test_an_httpx2_client_works() -> None:
    app = sdk_server().streamable_http_app(stateless_http=False, json_response=True)
    async with app.router.lifespan_context(app):
        for asgi in (app, sessions_only(app)):
            async with httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=asgi), base_url=BASE
            ) as client:
                source = at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client)
                async with source.lifespan():
                    assert "echo" in [d.name for d in await source.discover()]
                    assert await source.call("echo", {"text": "2"}) == {"result": "2"}


@pytest.mark.anyio
@pytest.mark.parametrize("module", ["httpx", "httpx2"])
@pytest.mark.parametrize("params", [None, {"k": "v"}])
async def test_every_request_goes_where_the_client_sends_the_url_given(
    module: str, params: dict[str, str] | None
) -> None:
    # The source parses its URL once into the client's own URL type: every request goes where
    # the client sends the string, its query kept beside the client's params (which httpx would
    # put in its place: the URL's query is given again as params).
    app = sdk_server().streamable_http_app(stateless_http=False, json_response=True)
    targets: list[tuple[str, str, bytes]] = []

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            targets.append((scope["method"], scope["path"], scope["query_string"]))
        await sessions_only(app)(scope, receive, send)

    http = httpx if module == "httpx" else httpx2
    url = f"{BASE}/mcp?tenant=7"
    async with (
        app.router.lifespan_context(app),
        http.AsyncClient(
            transport=http.ASGITransport(app=recording), base_url=BASE, params=params
        ) as client,
    ):
        again = None if params is None else (("tenant", "7"),)
        expected = client.build_request("POST", url, params=again).url
        source = at.mcp.http(name="demo", url=url, client=client)
        async with source.lifespan():
            assert await source.call("echo", {"text": "2"}) == {"result": "2"}
    assert expected.query == (b"tenant=7" if params is None else b"k=v&tenant=7")
    assert [verb for verb, _, _ in targets] == ["POST"] * 4 + ["DELETE"]
    assert {(path, query) for _, path, query in targets} == {(expected.path, expected.query)}


@pytest.mark.anyio
@pytest.mark.parametrize("module", ["httpx", "httpx2"])
async def test_a_client_whose_own_stream_reads_the_url_as_a_string_works(module: str) -> None:
    # A host's subclass may read the URL it is given as the string the source's client protocol
    # promises (to sign the request's path); it is given the string, never the client's URL.
    app = sdk_server().streamable_http_app(stateless_http=False, json_response=True)
    http = httpx if module == "httpx" else httpx2
    signed: list[str] = []

    class Signing(http.AsyncClient):  # type: ignore[name-defined,misc]
        def stream(self, method: str, url: str, **kwargs: object) -> object:
            path = urlsplit(url).path
            signed.append(path)
            headers = {**cast("dict[str, str]", kwargs.pop("headers", {})), "X-Signed": path}
            return super().stream(method, url, headers=headers, **kwargs)

    async with (
        app.router.lifespan_context(app),
        Signing(transport=http.ASGITransport(app=app)) as client,
    ):
        source = at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client)
        async with source.lifespan():
            assert await source.call("echo", {"text": "2"}) == {"result": "2"}
    assert set(signed) == {"/mcp"}


@pytest.mark.anyio
async def test_an_httpx2_client_failing_to_connect_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with httpx2.AsyncClient() as client:
        source = at.mcp.http(name="demo", url=f"http://127.0.0.1:{port}/mcp", client=client)
        async with source.lifespan():
            with pytest.raises(at.UnavailableError):
                await source.discover()


@pytest.mark.anyio
async def test_the_runtime_ends_the_session_when_the_actor_stops() -> None:
    async with served("sdk", "sessions-sse") as (client, recorder):
        async with at.Runtime() as runtime:
            ref = await runtime.spawn(at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client))
            assert await ref.call("echo", {"text": "x"}) == {"result": "x"}
        assert recorder.calls()[-1] == "DELETE"
        assert recorder.seen[-1][2] == 200


# Under uvicorn on loopback: real streams.


@pytest.fixture
def uvicorn_url(request: pytest.FixtureRequest) -> Iterator[str]:
    mode = cast(Mode, request.param)
    app, starlette = build("sdk", mode)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    cancelled.clear()
    thread.start()
    try:
        while not server.started:
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
    del starlette


@pytest.mark.anyio
@pytest.mark.parametrize("uvicorn_url", ["sessions-sse"], indirect=True)
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_streamed_answer_with_log_notifications_is_read(uvicorn_url: str) -> None:
    async with httpx.AsyncClient() as client:
        source = at.mcp.http(name="demo", url=uvicorn_url, client=client)
        async with source.lifespan():
            assert await source.call("chatty", {}) == {"result": "said"}


@pytest.mark.anyio
@pytest.mark.parametrize("uvicorn_url", ["stateless-sse", "sessions-sse"], indirect=True)
async def test_a_blocking_tool_past_the_timeout_is_unavailable(uvicorn_url: str) -> None:
    async with httpx.AsyncClient() as client:
        source = at.mcp.http(name="demo", url=uvicorn_url, client=client, timeout=0.5)
        async with source.lifespan():
            await source.discover()
            with anyio.fail_after(5), pytest.raises(at.UnavailableError):
                await source.call("block", {})


@pytest.mark.anyio
@pytest.mark.parametrize("uvicorn_url", ["stateless-sse"], indirect=True)
async def test_a_cancelled_call_closes_its_response_stream(uvicorn_url: str) -> None:
    async with httpx.AsyncClient() as client:
        source = at.mcp.http(name="demo", url=uvicorn_url, client=client)
        async with source.lifespan():
            await source.discover()
            with anyio.move_on_after(0.5):
                await source.call("block", {})
            assert await anyio.to_thread.run_sync(cancelled.wait, 5), (
                "the server never saw the call end"
            )
            assert await source.call("echo", {"text": "after"}) == {"result": "after"}


# The source as an actor: fresh state on restart, the session changed by messages.


class Crashable:
    """One ``at.mcp.http`` source, built once, in a lifespan that crashes when ``crash`` is set:
    each incarnation enters the same source's lifespan again."""

    def __init__(self, source: at.ToolSource) -> None:
        self.source = source
        self.name = source.name
        self.crash = anyio.Event()
        self.running = anyio.Event()

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return await self.source.discover()

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        return await self.source.call(tool, input)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.crash = anyio.Event()

        async def watch() -> None:
            await self.crash.wait()
            raise OSError("the lifespan crashed")

        assert isinstance(self.source, at.runtime.Lifespan)
        async with self.source.lifespan(), anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            self.running.set()
            yield
            tasks.cancel_scope.cancel()


def session_ids(recorder: Recorder, method: str) -> list[str]:
    return [h.get("mcp-session-id", "") for _, m, _, h in recorder.seen if m == method]


@pytest.mark.anyio
async def test_a_crash_of_the_lifespan_begins_a_new_session_at_the_server() -> None:
    async with served("sdk", "sessions-sse") as (client, recorder):
        source = Crashable(at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client))
        async with at.Runtime() as runtime:
            ref = await runtime.spawn(source)
            assert await ref.call("echo", {"text": "before"}) == {"result": "before"}
            [before] = session_ids(recorder, "tools/call")
            source.running = anyio.Event()
            source.crash.set()
            await source.running.wait()  # the next incarnation entered the same source
            assert await ref.call("echo", {"text": "after"}) == {"result": "after"}
            assert ref.statistics().restarts == 1
            after = session_ids(recorder, "tools/call")[-1]
    assert recorder.calls().count("POST initialize") == 2
    assert after != before
    # The crashed incarnation ended its session on the way out, the new one at the stop.
    deleted = [h["mcp-session-id"] for verb, _, _, h in recorder.seen if verb == "DELETE"]
    assert deleted == [before, after]


class HoldEnded:
    """Holds every request of the session ``ended`` until ``count`` of them have come."""

    def __init__(self, app: ASGIApp, count: int) -> None:
        self.app = app
        self.count = count
        self.ended: bytes | None = None
        self.arrived = 0
        self.all_arrived = anyio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = dict(scope["headers"]).get(b"mcp-session-id") if scope["type"] == "http" else None
        if session is not None and session == self.ended:
            self.arrived += 1
            if self.arrived == self.count:
                self.all_arrived.set()
            await self.all_arrived.wait()
        await self.app(scope, receive, send)


@pytest.mark.anyio
async def test_a_hundred_calls_that_meet_an_ended_session_begin_one_new_session() -> None:
    app, starlette = build("sdk", "sessions-json")
    hold = HoldEnded(app, 100)
    recorder = Recorder(hold)
    async with (
        starlette.router.lifespan_context(starlette),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=recorder), base_url=BASE) as client,
        at.Runtime() as runtime,
    ):
        ref = await runtime.spawn(
            at.mcp.http(name="demo", url=f"{BASE}/mcp", client=client), max_concurrency=100
        )
        assert await ref.call("echo", {"text": "a"}) == {"result": "a"}
        [ended] = session_ids(recorder, "tools/call")
        gone = await client.delete(
            "/mcp", headers={"mcp-session-id": ended, "mcp-protocol-version": "2025-11-25"}
        )
        assert gone.status_code == 200
        hold.ended = ended.encode()
        answers: list[at.JsonValue] = []

        async def call(n: int) -> None:
            answers.append(await ref.call("echo", {"text": str(n)}))

        async with anyio.create_task_group() as tasks:
            for n in range(100):
                tasks.start_soon(call, n)
        assert sorted(map(str, answers)) == sorted(str({"result": str(n)}) for n in range(100))
    calls = session_ids(recorder, "tools/call")
    assert calls.count(ended) == 101  # the first call, then each of the 100 met the end
    assert recorder.calls().count("POST initialize") == 2
    assert len(set(calls) - {ended}) == 1
