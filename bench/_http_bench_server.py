"""The HTTP API of the HTTP-source benchmark: a Starlette app answering ``GET /items/{item_id}``
with a small JSON object. Run as ``python _http_bench_server.py PORT``."""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def item(request: Request) -> JSONResponse:
    return JSONResponse({"id": request.path_params["item_id"], "name": "an item", "tags": ["a"]})


app = Starlette(routes=[Route("/items/{item_id}", item)])

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=120,
        # uvicorn's own defaults, named, as for every bench server (see _raw_mcp_server.py).
        http="h11",
        loop="asyncio",
    )
