"""HTTP operations written by hand, as data, run against an API this file starts on 127.0.0.1."""

from __future__ import annotations

import json
import socket

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import amends_toolkit as at

# --8<-- [start:operation]
get_item = at.http.Operation(
    definition=at.ToolDefinition(
        name="get_item",
        description="Get one item of a shop.",
        input_schema={
            "type": "object",
            "properties": {
                "shop": {"type": "string"},
                "item_id": {"type": "string"},
                "fields": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["shop", "item_id"],
            "additionalProperties": False,
        },
        annotations=at.Annotations(read_only=True),
    ),
    request=at.http.RequestTemplate(
        method="GET",
        path="/shops/{shop}/items/{id}",
        params={
            "shop": at.http.Param(location="path", name="shop"),
            "item_id": at.http.Param(location="path", name="id"),
            "fields": at.http.Param(location="query", name="field"),
        },
        body=None,
    ),
)
# --8<-- [end:operation]


async def turn(base_url: str) -> None:
    # --8<-- [start:source]
    stored = at.catalog.dump(get_item)  # the operation as catalog JSON
    assert isinstance(stored, dict)
    print(json.dumps(stored["request"]))
    async with httpx.AsyncClient(headers={"Authorization": "Bearer shop-token"}) as client:
        shop = at.http.make(name="shop", base_url=base_url, operations=[get_item], client=client)
        item = await shop.call("get_item", {"shop": "north", "item_id": "42", "fields": ["name"]})
        print(json.dumps(item))  # GET /v1/shops/north/items/42?field=name
        # A path value stays one segment, whatever it holds: no request is sent for this one.
        try:
            await shop.call("get_item", {"shop": "north", "item_id": "../admin"})
        except at.InvalidInputError as error:
            print(error.model_message)
    # --8<-- [end:source]


# --8<-- [start:server]
async def item(request: Request) -> JSONResponse:
    if request.headers.get("authorization") != "Bearer shop-token":
        return JSONResponse({"error": "who are you?"}, status_code=401)
    return JSONResponse(
        {
            "shop": request.path_params["shop"],
            "id": request.path_params["id"],
            "fields": request.query_params.getlist("field"),
        }
    )


api = Starlette(routes=[Route("/v1/shops/{shop}/items/{id}", item)])


async def main() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = uvicorn.Server(uvicorn.Config(api, log_level="warning"))
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            await turn(f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
            server.should_exit = True


# --8<-- [end:server]


if __name__ == "__main__":
    anyio.run(main)
