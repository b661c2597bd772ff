"""The amends-toolkit demo, on servers embedded in this process.

Two servers listen on 127.0.0.1: an MCP server (FastMCP) with a to-do list, and a notes API
(Starlette) that publishes an OpenAPI document and a weather endpoint it does not document. Both
accept only the host's token. The host gives its credentials to one HTTP client, spawns three
sources over it in a runtime (the MCP server, the operations of the OpenAPI document, and an
operation written by hand), stores their catalog, assembles a turn's toolkit under a policy, and
runs the model's calls in a session that asks a person before anything destructive. Then the same
toolkit is presented as two tools (tool search), as one tool that runs Python in a sandbox (code
mode), and shown in OpenAI's request format.

Run: ``amends-toolkit demo`` (``./scripts/demo`` makes a venv and runs it).
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import TYPE_CHECKING, Annotated

import anyio
import httpx
import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import amends_toolkit as at
from amends_toolkit.cli._output import Output
from amends_toolkit.cli._uvicorn import QuietServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

    from starlette.requests import Request
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN = "demo-token-not-for-models"


def tasks_server() -> ASGIApp:
    """An MCP server over Streamable HTTP (stateless 2026-07-28 and sessions, on one endpoint)."""
    mcp = FastMCP("tasks")
    tasks: dict[int, dict[str, object]] = {1: {"id": 1, "title": "Water the plants", "done": False}}

    @mcp.tool(annotations={"readOnlyHint": True})
    def list_tasks() -> list[dict[str, object]]:
        """List every task on the to-do list."""
        return list(tasks.values())

    @mcp.tool(annotations={"readOnlyHint": False, "idempotentHint": False})
    def add_task(title: Annotated[str, Field(min_length=1)]) -> dict[str, object]:
        """Add a task to the to-do list."""
        task: dict[str, object] = {"id": max(tasks, default=0) + 1, "title": title, "done": False}
        tasks[int(str(task["id"]))] = task
        return task

    @mcp.tool(annotations={"destructiveHint": True})
    def delete_task(task_id: int) -> str:
        """Delete a task from the to-do list for good."""
        if tasks.pop(task_id, None) is None:
            raise ToolError(f"there is no task {task_id}")
        return f"deleted task {task_id}"

    return Guarded(mcp.http_app(path="/mcp", stateless_http=True, json_response=True))


NOTES_DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Notes", "version": "1"},
    "servers": [{"url": "https://notes.example.com"}],
    "paths": {
        "/notes": {
            "get": {
                "operationId": "listNotes",
                "summary": "List the notes, newest first",
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}
                ],
                "responses": {"200": {"description": "the notes"}},
            },
            "post": {
                "operationId": "createNote",
                "summary": "Write a new note",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewNote"}}
                    },
                },
                "responses": {"201": {"description": "the note"}},
            },
        },
        "/notes/{noteId}": {
            "delete": {
                "operationId": "deleteNote",
                "summary": "Delete a note",
                "parameters": [
                    {
                        "name": "noteId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer"},
                    }
                ],
                "responses": {"204": {"description": "deleted"}},
            }
        },
    },
    "components": {
        "schemas": {
            "NewNote": {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "text": {"type": "string"},
                    "pinned": {"type": "boolean", "nullable": True},
                },
                "additionalProperties": False,
            }
        }
    },
}


def notes_server() -> ASGIApp:
    """A small HTTP API with an OpenAPI document, and one endpoint it does not document."""
    notes: list[dict[str, object]] = []

    async def list_notes(request: Request) -> Response:
        limit = int(request.query_params.get("limit", "10"))
        return JSONResponse(list(reversed(notes))[:limit])

    async def create_note(request: Request) -> Response:
        body = await request.json()
        note = {"id": len(notes) + 1, **body}
        notes.append(note)
        return JSONResponse(note, status_code=201)

    async def delete_note(request: Request) -> Response:
        note_id = int(request.path_params["note_id"])
        notes[:] = [note for note in notes if note["id"] != note_id]
        return Response(status_code=204)

    async def weather(request: Request) -> Response:
        city = request.path_params["city"]
        unit = request.query_params.get("unit", "celsius")
        return JSONResponse({"city": city, "unit": unit, "forecast": "sunny", "high": 21})

    async def document(_: Request) -> Response:
        return JSONResponse(NOTES_DOCUMENT)

    return Guarded(
        Starlette(
            routes=[
                Route("/openapi.json", document),
                Route("/notes", list_notes, methods=["GET"]),
                Route("/notes", create_note, methods=["POST"]),
                Route("/notes/{note_id:int}", delete_note, methods=["DELETE"]),
                Route("/weather/{city}", weather),
            ]
        )
    )


class Guarded:
    """Refuse every request that does not carry the host's token, as a real API would."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            dict(scope["headers"]).get(b"authorization") != f"Bearer {TOKEN}".encode()
        ):
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class Disconnects:
    """End a request whose client went away mid-request (the demo's own calls, cut by Ctrl-C)
    as the end of that request: nothing is left to answer, and nothing went wrong. Without it
    uvicorn logs the SDK's ``ClientDisconnect`` as an ERROR with its traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with suppress(ClientDisconnect):
            await self.app(scope, receive, send)


@asynccontextmanager
async def serve(app: ASGIApp) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 and a free port; yield its base URL.

    However the block ends (its end, an error such as a reader gone, Ctrl-C), the server stops
    as uvicorn stops it, its lifespan's shutdown included, within a second: cancelled mid-serve,
    uvicorn left its lifespan task to be cancelled as the loop closed, and logged that as an
    ERROR with its traceback.
    """
    config = uvicorn.Config(
        Disconnects(app), host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
    )
    server = QuietServer(config)

    async def run() -> None:
        with anyio.CancelScope(shield=True):  # it ends when should_exit says so
            await server.serve()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        try:
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


_output = Output()


def show(title: str, value: object) -> None:
    _output.title(title)
    if isinstance(value, str):
        _output.line(value)
    else:
        _output.json(value, limit=700)


class Host:
    """The host's side of the model's calls, each printed under the call it belongs to: the
    approvals it asks a person for, the error behind a failure (``on_error``, which runs before
    the call returns), and a name the policy blocked, which the model reads as no such tool."""

    def __init__(self, blocked: Mapping[str, tuple[str, str]]) -> None:
        self.blocked = blocked
        self.seen: list[str] = []

    async def approve(self, name: str, input: at.JsonObject) -> bool:
        # The person says yes to tasks and no to notes, through tool_call too.
        answer = str(input["name"] if name == "tool_call" else name).startswith("tasks__")
        print(f"   ? approve {name}({json.dumps(input)}) -> {'yes' if answer else 'no'}")
        return answer

    def on_error(self, name: str, error: at.ToolSourceError) -> None:
        self.seen.append(f"the host sees {type(error).__name__} from {error.source} behind {name}")

    async def call(self, session: at.Session, name: str, input: at.JsonObject) -> None:
        """Run one call of the model and print it, what the model reads, and what the host saw."""
        print(f"-> {name}({json.dumps(input)})")
        result = await session.call(name, input)
        print(f"   {json.dumps(result)[:300]}")
        if (
            name in self.blocked
            and isinstance(result, dict)
            and result.get("code") == "NotFoundError"
        ):
            source, tool = self.blocked[name]
            self.seen.append(
                f"the host: {name} is blocked by the policy (source {source}, tool {tool}); "
                "the model reads NotFoundError"
            )
        for seen in self.seen:
            print(f"   ! {seen}")
        self.seen.clear()


def table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table, its columns named on a terminal and piped alike: the demo's reader is a person
    wherever it goes (``inspect`` keeps its piped rows bare, for ``cut`` and ``awk``)."""
    _output.table(columns, rows if _output.fancy else [columns, *rows])


@contextmanager
def quiet(*loggers: str) -> Iterator[None]:
    """Loggers that say nothing below CRITICAL within the block, their levels restored after."""
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


async def run_demo(output: Output | None = None) -> None:
    """The demo, printed through ``output`` (rich on a terminal, plain text otherwise)."""
    global _output
    _output = output or Output()
    # The embedded server logs each failure of its tools ("Error calling tool ..."); amid the
    # output that read like a crash. The demo shows each failure as the host sees it instead.
    with quiet("fastmcp"):
        await _run()


async def _run() -> None:
    async with (
        serve(tasks_server()) as tasks_url,
        serve(notes_server()) as notes_url,
        # The host's client carries the credentials; no source sees them, no model reads them.
        httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as client,
        at.Runtime() as runtime,
    ):
        # The host fetches the document it trusts; reading it fetches nothing.
        document = (await client.get(f"{notes_url}/openapi.json")).json()
        read = at.openapi.read_operations(document)
        show(
            "OpenAPI: operations read, skipped, servers (listed, never used)",
            {
                "operations": [o.definition.name for o in read.operations],
                "skipped": [str(s) for s in read.skipped],
                "servers": list(read.servers),
            },
        )

        weather = at.http.Operation(
            definition=at.ToolDefinition(
                name="get_weather",
                description="Today's weather forecast for a city.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    },
                    "required": ["city"],
                    "additionalProperties": False,
                },
                annotations=at.Annotations(read_only=True),
            ),
            request=at.http.RequestTemplate(
                method="GET",
                path="/weather/{city}",
                params={
                    "city": at.http.Param(location="path", name="city"),
                    "unit": at.http.Param(location="query", name="unit"),
                },
            ),
        )
        show("A hand-written operation as catalog JSON", at.catalog.dump(weather))

        tasks = await runtime.spawn(
            at.mcp.http(name="tasks", url=f"{tasks_url}/mcp", client=client), call_timeout=30.0
        )
        notes = await runtime.spawn(
            at.http.make(
                name="notes", base_url=notes_url, operations=read.operations, client=client
            )
        )
        weather_source = await runtime.spawn(
            at.http.make(name="weather", base_url=notes_url, operations=[weather], client=client)
        )

        # The catalog: what each source has now, which a host stores and refreshes.
        with _output.status("Discovering the sources' tools"):
            catalog = {ref.name: await ref.discover() for ref in (tasks, notes, weather_source)}
        show(
            "Catalog: the tools of each source",
            {name: [d.name for d in definitions] for name, definitions in catalog.items()},
        )
        show("One definition as the host stores it", at.catalog.dump(catalog["tasks"][0]))

        def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
            if definition.annotations.destructive:
                return "approve"
            if source == "notes" and definition.name == "listNotes":
                return "block"  # this host keeps other people's notes from the model
            return "allow"

        members = [at.Member(ref, catalog[ref.name]) for ref in (tasks, notes, weather_source)]
        toolkit = at.assemble(members, decide)
        # What the policy keeps from the model, by the names the model would call it: the host
        # knows, the model reads only that there is no such tool.
        everything = at.assemble(members, lambda source, definition: "allow")
        blocked = {n: everything.source_tool(n) for n in everything.tools if n not in toolkit}
        _output.title("The toolkit of the turn")
        table(
            ["tool", "needs approval"],
            [
                [name, "yes" if tool.needs_approval is not False else "no"]
                for name, tool in toolkit.tools.items()
            ],
        )
        _output.line(f"blocked by the policy, so not in it: {', '.join(blocked)}")
        host = Host(blocked)

        async with at.Session(toolkit, approve=host.approve, on_error=host.on_error) as session:
            _output.title("The model's calls, each read as a result")
            calls: list[tuple[str, at.JsonObject]] = [
                ("tasks__add_task", {"title": "Buy bread"}),
                ("tasks__list_tasks", {}),
                ("tasks__delete_task", {"task_id": 1}),
                ("tasks__delete_task", {"task_id": 99}),
                ("notes__createNote", {"body": {"text": "Call Ana", "pinned": None}}),
                ("notes__createNote", {"body": {"txt": "typo"}}),
                ("notes__deleteNote", {"noteId": 1}),
                ("notes__listNotes", {}),
                ("weather__get_weather", {"city": "Lisbon", "unit": "celsius"}),
            ]
            for name, input in calls:
                await host.call(session, name, input)

        # A client without the credentials: the model reads an AuthenticationError, nothing more.
        async with httpx.AsyncClient() as stranger:
            locked = at.http.make(
                name="weather", base_url=notes_url, operations=[weather], client=stranger
            )
            bare = at.source_toolkit(locked, [weather.definition])
            async with at.Session(bare, approve=host.approve, on_error=host.on_error) as session:
                _output.title("Without credentials")
                await host.call(session, "get_weather", {"city": "Porto"})

        # Tool search: the same toolkit as two tools, whatever its size.
        searched = at.tool_search(toolkit)
        show("Tool search presents", list(searched.tools))
        found = await searched.call("tool_search", {"query": "remove a task", "limit": 2})
        show("tool_search('remove a task')", found)
        async with at.Session(searched, approve=host.approve, on_error=host.on_error) as session:
            _output.title("tool_call asks approval as the tool itself would")
            await host.call(
                session, "tool_call", {"name": "tasks__delete_task", "input": {"task_id": 2}}
            )

        # Code mode: one tool, execute, that runs Python in the Monty sandbox, which reaches
        # nothing but the tools; tools that need approval stay tools of their own beside it.
        async with at.MontyRuntime() as sandbox:
            coded = at.code_mode(toolkit, sandbox)
            show("Code mode presents", list(coded.tools))
            code = (
                'await tools.tasks__add_task({"title": "Fix the bike"})\n'
                'tasks = (await tools.tasks__list_tasks({}))["result"]\n'
                'print(len(tasks), "tasks")\n'
                'forecast = await tools.weather__get_weather({"city": "Porto"})\n'
                'return {"open": [t["title"] for t in tasks], "high": forecast["high"]}'
            )
            async with at.Session(coded, approve=host.approve, on_error=host.on_error) as session:
                _output.title("execute: three tool calls in one run")
                await host.call(session, "execute", {"code": code})
                _output.title("execute: code that fails is a result too")
                await host.call(session, "execute", {"code": "return 1 / 0"})

        show("In OpenAI's request format (never strict)", at.adapters.openai_tools(toolkit)[:1])
        _output.title("Actors")
        table(
            ["source", "queued", "in flight", "restarts", "state"],
            [
                [ref.name, str(s.queued), str(s.in_flight), str(s.restarts), s.state]
                for ref in (tasks, notes, weather_source)
                for s in [ref.statistics()]
            ],
        )
