"""An HTTP API is sent a traced call's ``traceparent`` only when the host says so, per source: an
API is a third party, and the header tells it the host's trace id. The API here is a handler
that says what it was sent."""

from __future__ import annotations

import anyio
import httpx
from http_operations import get_item
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

import amends_toolkit as at

trace.set_tracer_provider(TracerProvider())


def api(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"traceparent": "traceparent" in request.headers})


async def main() -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(api)) as client:
        for propagate in (False, True):
            # --8<-- [start:source]
            source = at.http.make(
                name="shop",
                base_url="https://shop.example/v1",
                operations=[get_item],
                client=client,
                propagate_trace=propagate,  # True: send a traced call's `traceparent` header
            )
            # --8<-- [end:source]
            toolkit = at.source_toolkit(source, [get_item.definition])
            print(await toolkit.call("get_item", {"shop": "north", "item_id": "42"}))


anyio.run(main)
