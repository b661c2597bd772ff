"""OpenTelemetry spans of a call (``_tracing.py``), exported by the SDK's in-memory exporter.

The tracer provider is the SDK's, given to the library as the global one would be (the API's
``get_tracer_provider`` answers it) for one test at a time: the process's real global is never
set, so no other test runs traced. The MCP server is the official SDK's under uvicorn in a
thread of its own (no context of the client's reaches it but what a request carries), whose
OpenTelemetry middleware reads ``params._meta``: a tool tells the trace and the span it runs in.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import amends_toolkit as at
from actors.test_mcp_http import sessions_only
from amends_toolkit import _tracing
from presentations.sources import Recording, allow_all, define

SECRET = "s3cr3t-planted-4242"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """The SDK's provider as the host's, its spans kept in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(_tracing, "_tracer", None)
    return exporter


def mcp_app() -> Starlette:
    server = MCPServer("traced")

    @server.tool()
    def seen(text: str) -> dict[str, str]:
        """Tell the trace and the span this call runs in, as the server's middleware read it."""
        context = otel_trace.get_current_span().get_span_context()
        return {
            "trace": otel_trace.format_trace_id(context.trace_id),
            "span": otel_trace.format_span_id(context.span_id),
        }

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def fail(text: str) -> str:
        """Fail, saying the text."""
        raise ToolError(f"it failed: {text}")

    return server.streamable_http_app(stateless_http=False, json_response=True)


@pytest.fixture
def mcp_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The server under uvicorn: of both eras, or (``"sessions"``) of sessions only."""
    app = mcp_app()
    served = sessions_only(app) if getattr(request, "param", "modern") == "sessions" else app
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(served, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


@asynccontextmanager
async def mcp_toolkit(url: str, *, inline: bool) -> AsyncIterator[at.Toolkit]:
    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        ref = await runtime.spawn(at.mcp.http(name="srv", url=url, client=client), inline=inline)
        definitions = await ref.discover()
        yield at.assemble([at.Member(ref, definitions)], allow_all)


def named(exported: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [span for span in exported if span.name == name]
    assert len(found) == 1, [span.name for span in exported]
    return found[0]


def attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("inline", "mcp_url"),
    [(True, "modern"), (False, "modern"), (False, "sessions")],
    ids=["inline", "through-the-mailbox", "in-a-session"],
    indirect=["mcp_url"],
)
async def test_a_session_call_is_one_trace_down_to_the_server_that_read_meta(
    spans: InMemorySpanExporter, mcp_url: str, inline: bool, request: pytest.FixtureRequest
) -> None:
    in_a_session = request.node.callspec.params["mcp_url"] == "sessions"
    async with mcp_toolkit(mcp_url, inline=inline) as toolkit:
        spans.clear()  # discover made none: it is no call
        async with at.Session(toolkit, approve=lambda name, input: True) as session:
            answer = await session.call("srv__seen", {"text": SECRET})
    exported = spans.get_finished_spans()
    tool = named(exported, "execute_tool srv__seen")
    source = named(exported, "source.call srv")
    sent = named(exported, "tools/call seen")
    assert len(exported) == 3
    assert len({span.context.trace_id for span in exported}) == 1
    assert tool.parent is None
    assert parent_of(source) == tool.context.span_id
    assert parent_of(sent) == source.context.span_id
    assert tool.kind == SpanKind.INTERNAL
    assert sent.kind == SpanKind.CLIENT
    assert attributes(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "srv__seen",
    }
    assert attributes(source)["amends_toolkit.source.name"] == "srv"
    assert attributes(source)["gen_ai.tool.name"] == "seen"
    assert isinstance(attributes(source)["amends_toolkit.actor.queued_seconds"], float)
    wire = attributes(sent)
    assert wire["mcp.method.name"] == "tools/call"
    assert wire["gen_ai.tool.name"] == "seen"
    assert wire["gen_ai.operation.name"] == "execute_tool"
    if in_a_session:
        assert wire["mcp.protocol.version"] == "2025-11-25"
        assert isinstance(wire["mcp.session.id"], str)
    else:
        assert wire["mcp.protocol.version"] == "2026-07-28"
        assert "mcp.session.id" not in wire
    assert wire["network.transport"] == "tcp"
    assert "jsonrpc.request.id" in wire
    # The server's middleware took its parent from params._meta: the MCP client span.
    assert isinstance(answer, dict)
    assert answer == {
        "trace": otel_trace.format_trace_id(sent.context.trace_id),
        "span": otel_trace.format_span_id(sent.context.span_id),
    }
    assert all(span.status.status_code != StatusCode.ERROR for span in exported)


@pytest.mark.anyio
async def test_a_tool_error_of_an_mcp_server_is_its_request_spans_error_type(
    spans: InMemorySpanExporter, mcp_url: str
) -> None:
    async with mcp_toolkit(mcp_url, inline=True) as toolkit:
        spans.clear()
        result = await toolkit.invoke("srv__fail", {"text": SECRET})
    assert result.failure is not None
    exported = spans.get_finished_spans()
    assert attributes(named(exported, "tools/call fail"))["error.type"] == "tool_error"
    for name in ("execute_tool srv__fail", "source.call srv"):
        assert attributes(named(exported, name))["error.type"] == "CallFailedError"
    assert all(span.status.status_code == StatusCode.ERROR for span in exported)


@pytest.mark.anyio
async def test_a_json_rpc_error_is_its_request_spans_error_type(
    spans: InMemorySpanExporter,
) -> None:
    # Our MCP front (the SDK's server) answers a tool it does not serve with -32602.
    front = at.adapters.mcp_server(
        at.source_toolkit(Recording("crm"), [define("find")]), name="front"
    )
    app = front.streamable_http_app()
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client,
        at.Runtime() as runtime,
    ):
        ref = await runtime.spawn(
            at.mcp.http(name="srv", url="http://127.0.0.1:8000/mcp", client=client)
        )
        # A tool the server does not have, as a stale catalog would hold.
        toolkit = at.source_toolkit(ref, [*await ref.discover(), define("ghost")])
        spans.clear()
        await toolkit.call("ghost", {})
    wire = attributes(named(spans.get_finished_spans(), "tools/call ghost"))
    assert wire["error.type"] == wire["rpc.response.status_code"] == "-32602"


@pytest.mark.anyio
async def test_a_failed_call_names_its_code_at_each_span_and_no_words(
    spans: InMemorySpanExporter,
) -> None:
    async def refuse(input: at.JsonObject) -> at.JsonValue:
        raise at.CallFailedError(source="crm", message=f"no such customer {SECRET}")

    source = Recording("crm", {"find": refuse})
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source)
        toolkit = at.assemble([at.Member(ref, [define("find")])], allow_all)
        result = await toolkit.invoke("crm__find", {"q": SECRET})
    assert result.failure is not None
    exported = spans.get_finished_spans()
    tool = named(exported, "execute_tool crm__find")
    call = named(exported, "source.call crm")
    for span in (tool, call):
        assert attributes(span)["error.type"] == "CallFailedError"
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description is None
        assert not span.events


@pytest.mark.anyio
async def test_a_name_no_tool_has_names_no_span(spans: InMemorySpanExporter) -> None:
    toolkit = at.source_toolkit(Recording("crm"), [define("find")])
    await toolkit.call(SECRET, {})
    (span,) = spans.get_finished_spans()
    assert span.name == "execute_tool"
    assert attributes(span) == {
        "gen_ai.operation.name": "execute_tool",
        "error.type": "NotFoundError",
    }


@asynccontextmanager
async def code_runtime(kind: str) -> AsyncIterator[at.CodeRuntime]:
    if kind == "monty":
        async with at.MontyRuntime() as monty:
            yield monty
    else:
        yield at.InProcessRuntime()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["in-process", "monty"])
async def test_code_mode_gives_a_span_per_tool_the_code_called(
    spans: InMemorySpanExporter, kind: str
) -> None:
    source = Recording("crm")
    async with at.Runtime() as runtime, code_runtime(kind) as sandbox:
        ref = await runtime.spawn(source)
        tools = at.assemble([at.Member(ref, [define("find"), define("count")])], allow_all)
        presented = at.code_mode(tools, sandbox)
        code = (
            "a = await tools.crm__find({'q': 1})\n"
            "b = await tools.crm__count({})\n"
            "c = await tools.crm__find({'q': 2})\n"
            "return 3"
        )
        async with at.Session(presented, approve=lambda name, input: True) as session:
            await session.call("execute", {"code": code})
    exported = spans.get_finished_spans()
    execute = named(exported, "execute_tool execute")
    inner = [span for span in exported if span.name.startswith("execute_tool crm__")]
    assert sorted(span.name for span in inner) == [
        "execute_tool crm__count",
        "execute_tool crm__find",
        "execute_tool crm__find",
    ]
    assert all(parent_of(span) == execute.context.span_id for span in inner)
    calls = [span for span in exported if span.name == "source.call crm"]
    assert sorted(parent_of(span) or 0 for span in calls) == sorted(
        span.context.span_id for span in inner
    )


@pytest.mark.anyio
async def test_tool_search_call_is_a_span_over_the_tool_it_runs(
    spans: InMemorySpanExporter,
) -> None:
    tools = at.source_toolkit(Recording("crm"), [define("find")])
    presented = at.tool_search(tools)
    await presented.call("tool_call", {"name": "find", "input": {"q": SECRET}})
    exported = spans.get_finished_spans()
    outer = named(exported, "execute_tool tool_call")
    assert parent_of(named(exported, "execute_tool find")) == outer.context.span_id


# HTTP sources: a span per request, named by the template, with no value.


def http_app(seen: list[dict[str, str]]) -> Starlette:
    async def item(request: Request) -> Response:
        seen.append(dict(request.headers))
        if request.path_params["id"] == "missing":
            return JSONResponse({"error": "gone"}, status_code=404)
        return JSONResponse({"id": request.path_params["id"], "token": SECRET})

    return Starlette(routes=[Route("/v1/items/{id}", item)])


ITEM = at.http.Operation(
    definition=define(
        "get_item",
        schema={
            "type": "object",
            "properties": {"item_id": {"type": "string"}, "q": {"type": "string"}},
            "required": ["item_id"],
        },
    ),
    request=at.http.RequestTemplate(
        method="GET",
        path="/items/{id}",
        params={
            "item_id": at.http.Param(location="path", name="id"),
            "q": at.http.Param(location="query", name="q"),
        },
    ),
)


@asynccontextmanager
async def http_toolkit(
    seen: list[dict[str, str]], *, propagate_trace: bool
) -> AsyncIterator[at.Toolkit]:
    transport = httpx.ASGITransport(app=http_app(seen))
    headers = {"Authorization": f"Bearer {SECRET}"}
    async with httpx.AsyncClient(transport=transport, headers=headers) as client:
        source = at.http.make(
            name="api",
            base_url="http://api.test:8080/v1",
            operations=[ITEM],
            client=client,
            propagate_trace=propagate_trace,
        )
        yield at.source_toolkit(source, [ITEM.definition])


@pytest.mark.anyio
async def test_an_http_request_span_has_the_route_template_and_no_value(
    spans: InMemorySpanExporter,
) -> None:
    seen: list[dict[str, str]] = []
    async with http_toolkit(seen, propagate_trace=False) as toolkit:
        await toolkit.call("get_item", {"item_id": SECRET, "q": SECRET})
        await toolkit.call("get_item", {"item_id": "missing"})
    requests = [span for span in spans.get_finished_spans() if span.kind == SpanKind.CLIENT]
    assert [span.name for span in requests] == ["GET /v1/items/{id}", "GET /v1/items/{id}"]
    ok, missing = (attributes(span) for span in requests)
    assert ok == {
        "http.request.method": "GET",
        "url.template": "/v1/items/{id}",
        "server.address": "api.test",
        "server.port": 8080,
        "http.response.status_code": 200,
    }
    assert missing["http.response.status_code"] == 404
    assert missing["error.type"] == "404"
    # Not asked to: the API is sent no trace context.
    assert all("traceparent" not in headers for headers in seen)


@pytest.mark.anyio
async def test_an_http_source_sends_traceparent_only_when_the_host_turns_it_on(
    spans: InMemorySpanExporter,
) -> None:
    seen: list[dict[str, str]] = []
    async with http_toolkit(seen, propagate_trace=True) as toolkit:
        await toolkit.call("get_item", {"item_id": "1"})
    (request,) = [span for span in spans.get_finished_spans() if span.kind == SpanKind.CLIENT]
    trace_id = otel_trace.format_trace_id(request.context.trace_id)
    span_id = otel_trace.format_span_id(request.context.span_id)
    assert seen[0]["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
    assert "tracestate" not in seen[0]
    assert "baggage" not in seen[0]


@pytest.mark.anyio
async def test_no_span_holds_an_input_an_answer_or_a_credential(
    spans: InMemorySpanExporter, mcp_url: str
) -> None:
    seen: list[dict[str, str]] = []
    async with http_toolkit(seen, propagate_trace=True) as http_tools:
        await http_tools.call("get_item", {"item_id": SECRET, "q": SECRET})
        await http_tools.call("get_item", {"item_id": "missing", "q": SECRET})
    async with mcp_toolkit(mcp_url, inline=False) as mcp_tools:
        async with at.Session(mcp_tools, approve=lambda name, input: True) as session:
            assert await session.call("srv__echo", {"text": SECRET}) == {"result": SECRET}
        await mcp_tools.call("srv__echo", {"text": 42})  # refused: its words hold the value
        await mcp_tools.call("srv__fail", {"text": SECRET})  # the server's words hold it
    exported = spans.get_finished_spans()
    assert len(exported) > 6
    for span in exported:
        written = json.dumps(
            {
                "name": span.name,
                "attributes": attributes(span),
                "events": [(event.name, dict(event.attributes or {})) for event in span.events],
                "status": span.status.description,
                "resource": dict(span.resource.attributes),
            },
            default=str,
        )
        assert SECRET not in written, span.name


@pytest.mark.anyio
async def test_without_a_provider_no_span_is_made_and_nothing_is_carried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_tracing, "_tracer", None)
    assert _tracing.tracer() is None
    carried: list[object] = []

    class Looking(Recording):
        async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
            carried.append(_tracing.traced())
            return await super().call(tool, input)

    async with at.Runtime() as runtime:
        ref = await runtime.spawn(Looking("crm"), inline=False)
        toolkit = at.assemble([at.Member(ref, [define("find")])], allow_all)
        await toolkit.call("crm__find", {})
    assert carried == [None]


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_call_waiting_in_the_mailbox_has_its_wait_on_its_span(
    spans: InMemorySpanExporter,
) -> None:
    release = anyio.Event()

    async def hold(input: at.JsonObject) -> at.JsonValue:
        await release.wait()
        return None

    source = Recording("slow", {"hold": hold})
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=1, inline=False)
        toolkit = at.assemble([at.Member(ref, [define("hold")])], allow_all)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(toolkit.call, "slow__hold", {})
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(toolkit.call, "slow__hold", {})
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(5)  # the second waits this long, behind the first
            release.set()
    waits = sorted(
        float(attributes(span)["amends_toolkit.actor.queued_seconds"])  # type: ignore[arg-type]
        for span in spans.get_finished_spans()
        if span.name == "source.call slow"
    )
    assert waits[0] < 5 <= waits[1]
