"""The MCP server front: an assembled toolkit served by the official SDK, read by MCP clients.

Clients: our own ``at.mcp.http`` over ``httpx.ASGITransport`` (in the stateless 2026-07-28 era,
and in a session when a middleware makes the server answer the modern probe as a server of
sessions only), and the SDK's own ``mcp.Client`` (in process, both eras, and over HTTP).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._peer import MAX_MODEL_TEXT
from amends_toolkit.adapters import mcp_front
from amends_toolkit.adapters.mcp_front import ToolkitServer

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8000"
SECRETS = ("10.0.0.7", "s3cret", "internal-token")
Era = Literal["stateless", "sessions"]

ADD_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "due": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
    },
    "required": ["title"],
    "additionalProperties": False,
    "$defs": {"tag": {"type": "string", "enum": ["home", "work"]}},
}
EMPTY: JsonObject = {"type": "object"}


class Tasks:
    """An in-process source: ``list`` answers an object, ``count`` a number, ``shout`` a string,
    ``add`` echoes its input, ``locked`` fails in its own words, ``down`` fails with an address
    and a secret in its (host-only) message, ``crash`` is a defect, ``wait`` waits for
    ``release``, ``delete`` needs approval and ``drop`` is blocked."""

    name = "tasks"

    def __init__(self) -> None:
        self.calls: list[tuple[str, JsonObject]] = []
        self.release = anyio.Event()
        self.waiting = anyio.Event()
        self.stopped = anyio.Event()

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return DEFINITIONS

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append((tool, input))
        if tool == "list":
            return {"tasks": [{"id": 1, "title": "write"}], "next": None}
        if tool == "count":
            return 3
        if tool == "shout":
            return "HELLO"
        if tool == "add":
            return {"added": input}
        if tool == "locked":
            raise at.CallFailedError(source=self.name, message="the row is locked")
        if tool == "down":
            raise at.UnavailableError(
                source=self.name,
                message="http://10.0.0.7:8443/v1 refused Bearer s3cret (internal-token)",
            )
        if tool == "crash":
            raise RuntimeError("internal-token s3cret at 10.0.0.7")
        if tool == "wait":
            self.waiting.set()
            try:
                await self.release.wait()
            finally:
                self.stopped.set()
            return "released"
        return {"deleted": input}


DEFINITIONS = [
    at.ToolDefinition(
        name="list",
        description="List the tasks.",
        input_schema=EMPTY,
        annotations=at.Annotations(title="List tasks", read_only=True, open_world=False),
    ),
    at.ToolDefinition(name="count", description="Count them.", input_schema=EMPTY),
    at.ToolDefinition(name="shout", description="Shout.", input_schema=EMPTY),
    at.ToolDefinition(
        name="add",
        description="Add a task.",
        input_schema=ADD_SCHEMA,
        annotations=at.Annotations(read_only=False, idempotent=False),
    ),
    at.ToolDefinition(name="locked", description="Locked.", input_schema=EMPTY),
    at.ToolDefinition(name="down", description="Down.", input_schema=EMPTY),
    at.ToolDefinition(name="crash", description="Crashes.", input_schema=EMPTY),
    at.ToolDefinition(name="wait", description="Waits.", input_schema=EMPTY),
    at.ToolDefinition(
        name="delete",
        description="Delete a task.",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        annotations=at.Annotations(destructive=True),
    ),
    at.ToolDefinition(name="drop", description="Drop everything.", input_schema=EMPTY),
]


def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
    return {"delete": "approve", "drop": "block"}.get(definition.name, "allow")  # type: ignore[return-value]


def members(source: Tasks) -> list[at.Member]:
    return [at.Member(source, DEFINITIONS)]


class Asked:
    """An ``approve`` that records what it was asked and answers as told."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, JsonObject]] = []

    async def __call__(self, name: str, input: JsonObject) -> bool:
        self.asked.append((name, input))
        return self.answer


def front(source: Tasks, approve: Asked | None = None, **options: object) -> ToolkitServer:
    toolkit = at.assemble(members(source), decide)
    server = at.adapters.mcp_server(
        toolkit,
        name="host",
        version="1.2.3",
        approve=approve,
        members=members(source),
        **options,  # type: ignore[arg-type]
    )
    assert isinstance(server, ToolkitServer)
    return server


def sessions_only(app: ASGIApp) -> ASGIApp:
    """Answer a 2026-07-28 request as a server of sessions only does, so a client begins one."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        if scope["type"] == "http" and headers.get(b"mcp-protocol-version") == b"2026-07-28":
            while (await receive()).get("more_body"):
                pass
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad"}}
            start = {"type": "http.response.start", "status": 400, "headers": []}
            await send(start)
            await send({"type": "http.response.body", "body": json.dumps(body).encode()})
            return
        await app(scope, receive, send)

    return wrapped


class Methods:
    """Records the MCP-Protocol-Version and Mcp-Session-Id each request came with."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str | None, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            self.seen.append((headers.get("mcp-protocol-version"), headers.get("mcp-session-id")))
        await self.app(scope, receive, send)


@asynccontextmanager
async def our_client(
    server: ToolkitServer, era: Era
) -> AsyncIterator[tuple[at.ToolSource, Methods]]:
    app = server.streamable_http_app()
    methods = Methods(app if era == "stateless" else sessions_only(app))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=methods), base_url=BASE) as http,
    ):
        source = at.mcp.http(name="front", url=f"{BASE}/mcp", client=http)
        async with source.lifespan():
            yield source, methods


ERAS = [pytest.param("stateless", id="stateless"), pytest.param("sessions", id="sessions")]


@pytest.mark.parametrize("era", ERAS)
async def test_our_client_lists_the_toolkit_as_it_is(era: Era) -> None:
    source = Tasks()
    server = front(source, Asked(True))
    async with our_client(server, era) as (client, methods):
        listed = await client.discover()
    toolkit = at.assemble(members(source), decide)
    assert [(d.name, d.description, d.input_schema) for d in listed] == [
        (tool.name, tool.description, tool.input_schema) for tool in toolkit.tools.values()
    ]
    by_name = {d.name: d for d in listed}
    assert "tasks__drop" not in by_name
    assert by_name["tasks__add"].input_schema == ADD_SCHEMA
    assert by_name["tasks__list"].annotations == at.Annotations(
        title="List tasks", read_only=True, open_world=False
    )
    assert by_name["tasks__add"].annotations == at.Annotations(read_only=False, idempotent=False)
    assert by_name["tasks__delete"].annotations == at.Annotations(destructive=True)
    assert by_name["tasks__count"].annotations == at.Annotations()
    versions = {version for version, _ in methods.seen}
    sessions = {session for _, session in methods.seen if session is not None}
    if era == "stateless":
        assert versions == {"2026-07-28"}
        assert not sessions
    else:
        assert "2025-11-25" in versions
        assert len(sessions) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_our_client_calls_get_the_answers(era: Era) -> None:
    source = Tasks()
    async with our_client(front(source, Asked(True)), era) as (client, _):
        # Our client reads structured content when there is some, else the content blocks.
        assert await client.call("tasks__list", {}) == {
            "tasks": [{"id": 1, "title": "write"}],
            "next": None,
        }
        assert await client.call("tasks__count", {}) == [{"type": "text", "text": "3"}]
        assert await client.call("tasks__shout", {}) == [{"type": "text", "text": "HELLO"}]
        added: JsonObject = {"title": "ship", "due": None, "tags": ["work"]}
        assert await client.call("tasks__add", added) == {"added": added}
    assert source.calls == [("list", {}), ("count", {}), ("shout", {}), ("add", added)]


@pytest.mark.parametrize("era", ERAS)
async def test_failures_are_errors_with_the_model_message_only(era: Era) -> None:
    source = Tasks()
    async with our_client(front(source, Asked(True)), era) as (client, _):
        caught: dict[str, at.ToolSourceError] = {}
        for tool in ("locked", "down", "crash"):
            with pytest.raises(at.CallFailedError) as failed:
                await client.call(f"tasks__{tool}", {})
            caught[tool] = failed.value
        with pytest.raises(at.CallFailedError) as refused:
            await client.call("tasks__add", {"title": "x", "colour": "red"})
        with pytest.raises(at.NotFoundError):
            await client.call("tasks__drop", {})
    assert caught["locked"].model_message == "the row is locked"
    assert caught["down"].model_message == at.UnavailableError(source="x").model_message
    assert caught["crash"].model_message == at.UnknownError(source="x").model_message
    for error in caught.values():
        for secret in SECRETS:
            assert secret not in error.model_message
            assert secret not in error.message
    assert "colour" in refused.value.model_message
    assert [tool for tool, _ in source.calls] == ["locked", "down", "crash"]


async def test_a_call_that_needs_approval_asks_the_callback() -> None:
    source = Tasks()
    yes, no = Asked(True), Asked(False)
    async with our_client(front(source, yes), "stateless") as (client, _):
        assert await client.call("tasks__delete", {"id": 7}) == {"deleted": {"id": 7}}
    async with our_client(front(source, no), "stateless") as (client, _):
        with pytest.raises(at.CallFailedError) as denied:
            await client.call("tasks__delete", {"id": 8})
    assert yes.asked == [("tasks__delete", {"id": 7})]
    assert no.asked == [("tasks__delete", {"id": 8})]
    assert denied.value.model_message == "A person did not approve this call; it did not run."
    assert source.calls == [("delete", {"id": 7})]


async def test_without_approve_a_tool_that_needs_approval_is_not_served() -> None:
    source = Tasks()
    server = front(source)
    assert "tasks__delete" not in server.toolkit
    async with our_client(server, "stateless") as (client, _):
        names = [d.name for d in await client.discover()]
        with pytest.raises(at.NotFoundError):
            await client.call("tasks__delete", {"id": 1})
    assert "tasks__delete" not in names
    assert "tasks__list" in names
    assert source.calls == []


async def test_a_tool_search_call_that_needs_approval_is_refused_without_approve() -> None:
    source = Tasks()
    presented = at.tool_search(at.assemble(members(source), decide))
    server = at.adapters.mcp_server(presented, name="search")
    async with Client(server.server) as sdk:
        listed = await sdk.list_tools()
        found = await sdk.call_tool("tool_search", {"query": "delete task"})
        denied = await sdk.call_tool("tool_call", {"name": "tasks__delete", "input": {"id": 1}})
        listing = await sdk.call_tool("tool_call", {"name": "tasks__list", "input": {}})
    assert [tool.name for tool in listed.tools] == ["tool_search", "tool_call"]
    assert all(tool.annotations is None for tool in listed.tools)
    assert found.is_error is False
    assert denied.is_error is True
    assert denied.content[0].text == "A person did not approve this call; it did not run."  # type: ignore[union-attr]
    assert listing.is_error is False
    assert source.calls == [("list", {})]


@pytest.mark.virtual_clock
async def test_on_error_sees_the_error_behind_a_failure_and_timeout_bounds_a_call() -> None:
    source = Tasks()
    seen: list[tuple[str, at.ToolSourceError]] = []
    server = front(
        source, Asked(True), on_error=lambda name, error: seen.append((name, error)), timeout=60.0
    )
    async with Client(server.server) as sdk:
        down = await sdk.call_tool("tasks__down", {})
        waited = await sdk.call_tool("tasks__wait", {})
    assert down.is_error
    assert waited.is_error
    assert [(name, type(error)) for name, error in seen] == [
        ("tasks__down", at.UnavailableError),
        ("tasks__wait", at.UnavailableError),
    ]
    # The host's on_error reads the whole message; the client reads the model's.
    assert "10.0.0.7" in seen[0][1].message
    assert waited.content[0].text == at.UnavailableError(source="x").model_message  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_the_client_cancels_is_cancelled(mode: Literal["auto", "legacy"]) -> None:
    source = Tasks()
    async with Client(front(source, Asked(True)).server, mode=mode) as sdk:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(sdk.call_tool, "tasks__wait", {})
                await source.waiting.wait()
                scope.cancel()
        with anyio.fail_after(5):
            await source.stopped.wait()
        # The connection serves on after a cancelled call.
        assert (await sdk.call_tool("tasks__shout", {})).is_error is False
    assert not source.release.is_set()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_in_process_in_both_eras(mode: Literal["auto", "legacy"]) -> None:
    source = Tasks()
    asked = Asked(True)
    server = front(source, asked)
    async with Client(server.server, mode=mode) as sdk:
        listed = await sdk.list_tools()
        answer = await sdk.call_tool("tasks__list", {})
        count = await sdk.call_tool("tasks__count", {})
        locked = await sdk.call_tool("tasks__locked", {})
        down = await sdk.call_tool("tasks__down", {})
        refused = await sdk.call_tool("tasks__add", {"title": 3})
        deleted = await sdk.call_tool("tasks__delete", {"id": 2})
        with pytest.raises(MCPError) as unknown:
            await sdk.call_tool("tasks__drop", {})
    toolkit = at.assemble(members(source), decide)
    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (tool.name, tool.description, tool.input_schema) for tool in toolkit.tools.values()
    ]
    annotations = {t.name: t.annotations for t in listed.tools}
    listed_hints = annotations["tasks__list"]
    assert listed_hints is not None
    assert listed_hints.model_dump(by_alias=True, exclude_none=True) == {
        "title": "List tasks",
        "readOnlyHint": True,
        "openWorldHint": False,
    }
    assert annotations["tasks__count"] is None
    structured = {"tasks": [{"id": 1, "title": "write"}], "next": None}
    assert answer.is_error is False
    assert answer.structured_content == structured
    assert [c.model_dump() for c in answer.content] == [
        {"type": "text", "text": json.dumps(structured), "annotations": None, "meta": None}
    ]
    assert count.structured_content is None
    assert count.content[0].text == "3"  # type: ignore[union-attr]
    assert (locked.is_error, [c.text for c in locked.content]) == (True, ["the row is locked"])  # type: ignore[union-attr]
    assert down.is_error is True
    assert len(down.content) == 1
    assert down.content[0].text == at.UnavailableError(source="x").model_message  # type: ignore[union-attr]
    assert down.structured_content is None
    assert refused.is_error is True
    assert "title" in refused.content[0].text  # type: ignore[union-attr]
    assert deleted.structured_content == {"deleted": {"id": 2}}
    assert unknown.value.error.code == -32602
    assert "Unknown tool" in unknown.value.error.message
    assert asked.asked == [("tasks__delete", {"id": 2})]
    assert ("add", {"title": 3}) not in source.calls


async def test_the_sdk_client_over_http_in_a_session() -> None:
    source = Tasks()
    server = front(source, Asked(True))
    app = server.streamable_http_app(json_response=True)
    methods = Methods(app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=methods), base_url=BASE) as http,
        Client(
            streamable_http_client(f"{BASE}/mcp", http_client=http, terminate_on_close=False),
            mode="legacy",
        ) as sdk,
    ):
        listed = await sdk.list_tools()
        answer = await sdk.call_tool("tasks__add", {"title": "ship"})
    assert "tasks__drop" not in [t.name for t in listed.tools]
    assert answer.structured_content == {"added": {"title": "ship"}}
    assert any(session is not None for _, session in methods.seen)


async def test_a_bad_timeout_or_toolkit_is_refused_when_building() -> None:
    toolkit = at.assemble(members(Tasks()), decide)
    with pytest.raises(ValueError, match="timeout"):
        at.adapters.mcp_server(toolkit, name="x", timeout=0)
    with pytest.raises(TypeError, match="serves a Toolkit"):
        at.adapters.mcp_server(at.Session(toolkit, approve=Asked(True)), name="x")  # type: ignore[arg-type]


async def test_a_bad_session_bound_is_refused_when_the_app_is_built() -> None:
    server = at.adapters.mcp_server(at.assemble(members(Tasks()), decide), name="x")
    with pytest.raises(ValueError, match="max_sessions"):
        server.streamable_http_app(max_sessions=0)
    with pytest.raises(ValueError, match="session_idle_timeout"):
        server.streamable_http_app(session_idle_timeout=float("inf"))


def test_the_adapters_import_without_the_sdk_and_say_what_is_missing() -> None:
    program = (
        "import sys\n"
        "sys.modules['mcp'] = sys.modules['mcp_types'] = None\n"
        "import amends_toolkit as at\n"
        "try:\n"
        "    at.adapters.mcp_server(at.assemble([], lambda *_: 'allow'), name='x')\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() in ("mcp", "mcp_types")


STDIO_SERVER = """
import anyio
import amends_toolkit as at

class Source:
    name = "s"
    async def discover(self):
        return []
    async def call(self, tool, input):
        return {"echo": input.get("text")}

definition = at.ToolDefinition(
    name="echo", description="Echo.", input_schema={"type": "object"},
    annotations=at.Annotations(read_only=True),
)
source = Source()
members = [at.Member(source, [definition])]
toolkit = at.assemble(members, lambda _, d: "allow")
anyio.run(at.adapters.mcp_server(toolkit, name="stdio", members=members).run_stdio)
"""


async def test_it_serves_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "serve.py"
    script.write_text(STDIO_SERVER)
    source = at.mcp.stdio(name="front", command=sys.executable, args=(str(script),), timeout=30)
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source)
        [definition] = await ref.discover()
        answer = await ref.call("s__echo", {"text": "hi"})
    assert (definition.name, definition.annotations) == ("s__echo", at.Annotations(read_only=True))
    assert answer == {"echo": "hi"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_schema_mcp_cannot_list_leaves_that_tool_out_alone(
    mode: Literal["auto", "legacy"], caplog: pytest.LogCaptureFixture
) -> None:
    source = Tasks()
    odd = [
        at.ToolDefinition(name="shout", description="No type.", input_schema={"properties": {}}),
        at.ToolDefinition(
            name="count",
            description="Malformed properties.",
            input_schema={"type": "object", "properties": "none"},
        ),
        at.ToolDefinition(name="list", description="List.", input_schema=EMPTY),
    ]
    toolkit = at.assemble([at.Member(source, odd)], lambda _, __: "allow")
    server = at.adapters.mcp_server(toolkit, name="odd")
    async with Client(server.server, mode=mode) as sdk:
        listed = await sdk.list_tools()
        shouted = await sdk.call_tool("tasks__shout", {})
        with pytest.raises(MCPError, match="Unknown tool"):
            await sdk.call_tool("tasks__count", {})
    assert [(t.name, t.input_schema) for t in listed.tools] == [
        ("tasks__shout", {"type": "object", "properties": {}}),
        ("tasks__list", EMPTY),
    ]
    assert shouted.content[0].text == "HELLO"  # type: ignore[union-attr]
    assert "tasks__count" not in server.toolkit
    assert "mcp_server.tool_left_out" in caplog.text


class Many:
    """A source of many tools, each answering its own name."""

    name = "many"

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return []

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return tool


def many(count: int) -> at.Toolkit:
    definitions = [
        at.ToolDefinition(name=f"t{index:04d}", description=f"Tool {index}.", input_schema=EMPTY)
        for index in range(count)
    ]
    return at.assemble([at.Member(Many(), definitions)], lambda _, __: "allow")


async def sdk_pages(sdk: Client) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await sdk.list_tools(cursor=cursor)
        pages.append([tool.name for tool in page.tools])
        cursor = page.next_cursor
        if cursor is None:
            return pages


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_large_toolkit_is_listed_in_pages_the_sdk_client_follows(
    mode: Literal["auto", "legacy"],
) -> None:
    toolkit = many(1_234)
    async with Client(at.adapters.mcp_server(toolkit, name="many").server, mode=mode) as sdk:
        pages = await sdk_pages(sdk)
        last = await sdk.call_tool("many__t1233", {})
    assert [len(page) for page in pages] == [500, 500, 234]
    assert [name for page in pages for name in page] == list(toolkit.tools)
    assert last.content[0].text == "t1233"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_our_client_follows_the_pages(era: Era) -> None:
    toolkit = many(23)
    async with our_client(at.adapters.mcp_server(toolkit, name="many", page_size=5), era) as (
        client,
        _,
    ):
        listed = await client.discover()
    assert [definition.name for definition in listed] == list(toolkit.tools)


async def test_a_page_never_holds_more_than_page_size_tools() -> None:
    toolkit = many(20)
    async with Client(at.adapters.mcp_server(toolkit, name="many", page_size=7).server) as sdk:
        pages = await sdk_pages(sdk)
        past_the_end = await sdk.list_tools(cursor="9999")
    assert [len(page) for page in pages] == [7, 7, 6]
    assert (past_the_end.tools, past_the_end.next_cursor) == ([], None)
    for size in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="page_size"):
            at.adapters.mcp_server(toolkit, name="many", page_size=size)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "cursor",
    ["", "abc", "-7", "٣", "1" * 13, "9" * 5_000],
    ids=["empty", "letters", "negative", "arabic-digit", "too-long", "past-int-digits"],
)
async def test_a_cursor_the_server_did_not_write_is_invalid_params(cursor: str) -> None:
    async with Client(at.adapters.mcp_server(many(3), name="many", page_size=2).server) as sdk:
        with pytest.raises(MCPError) as refused:
            await sdk.list_tools(cursor=cursor)
    assert refused.value.error.code == -32602
    assert cursor not in refused.value.error.message or not cursor


async def test_the_listing_is_built_once_per_toolkit_not_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[int] = []
    serve = ToolkitServer._serve

    def counted(self: ToolkitServer, toolkit: at.Toolkit, members: object) -> object:
        built.append(len(toolkit))
        return serve(self, toolkit, members)  # type: ignore[arg-type]

    monkeypatch.setattr(ToolkitServer, "_serve", counted)
    server = at.adapters.mcp_server(many(30), name="many", page_size=10)
    async with Client(server.server) as sdk:
        for _ in range(3):
            assert sum(map(len, await sdk_pages(sdk))) == 30
        server.replace(many(12))
        assert sum(map(len, await sdk_pages(sdk))) == 12
    assert built == [30, 12]


async def test_the_listing_is_checked_a_page_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each check is one call into pydantic-core, which holds the interpreter: a page's worth
    # at most, so a worker thread that builds a listing leaves the event loop its turns.
    checked: list[int] = []

    def counted(method: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
        checked.append(len(data["tools"]))
        return serialize_server_result(method, version, data)

    monkeypatch.setattr(mcp_front, "serialize_server_result", counted)
    at.adapters.mcp_server(many(25), name="many", page_size=10)
    assert max(checked) == 10
    assert sum(checked) == 25 * len(mcp_front._VERSIONS)


async def test_an_unknown_name_is_echoed_cut() -> None:
    name = "x" * 100_000
    async with Client(at.adapters.mcp_server(many(1), name="many").server) as sdk:
        with pytest.raises(MCPError) as refused:
            await sdk.call_tool(name, {})
    assert refused.value.error.message.startswith("Unknown tool: xxx")
    assert len(refused.value.error.message) <= MAX_MODEL_TEXT + len("Unknown tool: ")


async def test_every_route_of_the_app_is_behind_the_host_check() -> None:
    app = front(Tasks(), Asked(True)).streamable_http_app()

    async def extra(request: Request) -> Response:
        return PlainTextResponse("operator's")

    app.router.routes.append(Route("/extra", extra))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http,
    ):
        assert (await http.get("/extra")).text == "operator's"
        for path in ("/extra", "/mcp"):
            foreign = await http.get(path, headers={"Host": "attacker.example"})
            assert (foreign.status_code, foreign.text) == (421, "Invalid Host header")
            origin = await http.get(path, headers={"Origin": "http://attacker.example"})
            assert origin.status_code == 403
    # Where the SDK turns the check off (not a loopback host), it is off for every route.
    open_app = front(Tasks(), Asked(True)).streamable_http_app(host="0.0.0.0")
    open_app.router.routes.append(Route("/extra", extra))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=open_app), base_url=BASE
    ) as http:
        assert (await http.get("/extra", headers={"Host": "gateway.example"})).status_code == 200


class _ByHeader:
    """An authenticator for tests: the caller is whoever ``X-Who`` names."""

    async def authenticate(self, request: Request) -> at.adapters.Caller:
        who = request.headers.get("x-who", "")
        return at.adapters.Caller(id=f"test:{who}", name=who, kind="keys")

    def routes(self) -> Sequence[Any]:
        return ()


def _pick(caller: at.adapters.Caller | None) -> str:
    if caller is None or caller.name not in ("few", "more"):
        raise at.adapters.Refused(403, "No toolkit serves this caller.", reason="no_profile")
    return caller.name


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_select_serves_each_caller_its_own_toolkit_alone(
    monkeypatch: pytest.MonkeyPatch, mode: Literal["legacy", "2026-07-28"]
) -> None:
    built: list[int] = []
    serve = ToolkitServer._serve

    def counted(self: ToolkitServer, toolkit: at.Toolkit, members: object) -> object:
        built.append(len(toolkit))
        return serve(self, toolkit, members)  # type: ignore[arg-type]

    monkeypatch.setattr(ToolkitServer, "_serve", counted)
    server = at.adapters.mcp_server(
        {"few": (many(3), ()), "more": (many(7), ())}, name="two", page_size=2, select=_pick
    )
    app = server.streamable_http_app(json_response=True, authenticator=_ByHeader())

    @asynccontextmanager
    async def client(who: str) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url=BASE, headers={"x-who": who}
            ) as http,
            Client(streamable_http_client(f"{BASE}/mcp", http_client=http), mode=mode) as sdk,
        ):
            yield sdk

    async with app.router.lifespan_context(app):
        async with client("few") as few, client("more") as more:
            assert sum(map(len, await sdk_pages(few))) == 3
            assert sum(map(len, await sdk_pages(more))) == 7
            assert (await more.call_tool("many__t0006", {})).content[0].text == "t0006"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="Unknown tool") as unknown:
                await few.call_tool("many__t0006", {})
            assert unknown.value.error.code == -32602
            server.replace_all({"few": (many(5), ()), "more": (many(1), ())})
            assert sum(map(len, await sdk_pages(few))) == 5
            assert (await few.call_tool("many__t0004", {})).content[0].text == "t0004"  # type: ignore[union-attr]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
            refused = await http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"x-who": "nobody", "accept": "application/json, text/event-stream"},
            )
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "no_profile",
        "error_description": "No toolkit serves this caller.",
    }
    # Each toolkit's listing built once per replace, never per request.
    assert built == [3, 7, 5, 1]
    assert set(server.toolkits) == {"few", "more"}
    with pytest.raises(ValueError, match="replace_all"):
        server.replace(many(2))
    with pytest.raises(ValueError, match="several toolkits"):
        _ = server.toolkit


def test_select_goes_with_several_toolkits_and_several_need_select() -> None:
    with pytest.raises(TypeError, match="select="):
        at.adapters.mcp_server({"a": (many(1), ())}, name="x")
    with pytest.raises(TypeError, match="mapping"):
        at.adapters.mcp_server(many(1), name="x", select=_pick)
    with pytest.raises(TypeError, match="not int"):
        at.adapters.mcp_server({"a": (3, ())}, name="x", select=_pick)  # type: ignore[dict-item]
    single = at.adapters.mcp_server(many(1), name="x")
    with pytest.raises(ValueError, match="replace it with replace"):
        single.replace_all({"a": (many(1), ())})
