"""The real servers a gateway test puts behind the gateway.

- ``tasks_app()``: an MCP server of the official SDK (both eras on one endpoint): tasks to list
  and to delete (destructive), a ``secret`` tool the policy blocks, and ``slow``, which answers
  after the seconds it is given.
- ``notes_app()``: a Starlette API and its OpenAPI document (``NOTES_DOCUMENT``).
- ``names_app()``: an SDK MCP server whose tools' names the gateway cleans (``admin.delete``) or
  cuts (``LONG_NAME``), and whose ``add_clash`` adds ``list.tasks`` beside ``list_tasks`` (one
  model-facing name for both) and says that the tools changed.
- run as a script (``python upstream.py stdio``): an SDK MCP server over stdio whose ``grow`` tool
  adds a tool and says so (``notifications/tools/list_changed``).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import anyio
from mcp.server.mcpserver import Context

NOTES_DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Notes", "version": "1"},
    "paths": {
        "/notes": {
            "get": {
                "operationId": "listNotes",
                "summary": "List the notes",
                "responses": {"200": {"description": "the notes"}},
            }
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
}


def tasks_app(release: threading.Event | None = None) -> Any:
    """``release``, when given, ends a ``slow`` call before its seconds, once it is set: a test
    orders what happens while the call runs by setting it, not by how long the call takes."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("tasks")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def list_tasks() -> list[str]:
        """List the tasks."""
        return ["water the plants", "buy bread"]

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def delete_task(task_id: int) -> str:
        """Delete a task for good."""
        return f"deleted {task_id}"

    @server.tool()
    def secret() -> str:
        """A tool no model may see."""
        return "the secret"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `grown`, and say that the tools changed (to subscriptions/listen)."""

        def grown() -> str:
            """A tool that was not there at first."""
            return "grown"

        server.add_tool(grown)
        await ctx.notify_tools_changed()
        return "growing"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answer after some seconds."""
        if release is None:
            await anyio.sleep(seconds)
        else:
            await anyio.to_thread.run_sync(release.wait, seconds)
        return "slow done"

    app = server.streamable_http_app(stateless_http=False, json_response=False)
    app.state.mcp = server  # a test adds tools to it
    return app


LONG_NAME = "export_every_record_of_every_table_to_a_file_in_the_archive_right_away"
"""A tool name of 70 characters: its model-facing name is cut."""
CLASHING = "list.tasks"
"""What ``add_clash`` adds: ``tasks__list_tasks`` once cleaned, as ``list_tasks`` is."""


def names_app(*, clashing: bool = False) -> Any:
    """``clashing``: ``list.tasks`` is there from the start."""
    from mcp.server import MCPServer

    server = MCPServer("names")

    @server.tool()
    def list_tasks() -> list[str]:
        """List the tasks."""
        return ["water the plants", "buy bread"]

    def admin_delete() -> str:
        """Delete every task."""
        return "deleted everything"

    def export() -> str:
        """Export every record."""
        return "exported everything"

    def clash() -> str:
        """List the tasks, under a name that clashes once cleaned."""
        return "the clashing tool"

    @server.tool()
    def echo(text: str) -> str:
        """Answer with the text given."""
        return text

    @server.tool()
    async def add_clash(ctx: Context) -> str:
        """Add ``list.tasks``, and say that the tools changed (to subscriptions/listen)."""
        server.add_tool(clash, name=CLASHING)
        await ctx.notify_tools_changed()
        return "clashing"

    server.add_tool(admin_delete, name="admin.delete")
    server.add_tool(export, name=LONG_NAME)
    if clashing:
        server.add_tool(clash, name=CLASHING)
    app = server.streamable_http_app(stateless_http=False, json_response=False)
    app.state.mcp = server  # a test takes tools away
    return app


def notes_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def list_notes(request: Request) -> Response:
        return JSONResponse([{"id": 1, "text": "call Ana"}])

    async def delete_note(request: Request) -> Response:
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/notes", list_notes, methods=["GET"]),
            Route("/notes/{note_id:int}", delete_note, methods=["DELETE"]),
        ]
    )


def stdio_server() -> None:
    from mcp.server import MCPServer

    server = MCPServer("grower")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `extra`, and say that the tools changed."""

        def extra() -> str:
            """A tool that was not there at first."""
            return "extra"

        server.add_tool(extra)
        await ctx.session.send_tool_list_changed()
        return "grown"

    server.run("stdio")


if __name__ == "__main__" and sys.argv[1:] == ["stdio"]:
    stdio_server()
