"""The operations of an OpenAPI document as tools, run against an API this file starts."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import amends_toolkit as at

DOCUMENT = Path(__file__).with_name("notes.yaml")


async def turn(base_url: str) -> None:
    # --8<-- [start:read]
    document = at.openapi.read_document(DOCUMENT)  # YAML (the `yaml` extra) or JSON
    read = at.openapi.read_operations(document)  # or a dict you already have
    print(read.servers)  # listed, never used: where requests go is the host's to say
    for skip in read.skipped:  # what the host lost, and why
        print(skip.method, skip.path, skip.reason)
    print(json.dumps(read.operations[1].definition.input_schema["properties"]))

    async with httpx.AsyncClient() as client:
        notes = at.http.make(
            name="notes", base_url=base_url, operations=read.operations, client=client
        )
        print(await notes.call("add_note", {"body": {"text": "Call the plumber"}}))
        print(await notes.call("list_notes", {"limit": 5}))
    # --8<-- [end:read]


NOTES: list[dict[str, str]] = []


async def notes(request: Request) -> JSONResponse:
    if request.method == "POST":
        NOTES.insert(0, await request.json())
        return JSONResponse(NOTES[0], status_code=201)
    return JSONResponse(NOTES[: int(request.query_params["limit"])])


async def main() -> None:
    api = Starlette(routes=[Route("/v1/notes", notes, methods=["GET", "POST"])])
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = uvicorn.Server(uvicorn.Config(api, log_level="warning"))
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            await turn(f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
            server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
