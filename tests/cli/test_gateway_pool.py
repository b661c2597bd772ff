"""The gateway's sources share one pool of connections, each with its own credentials:
``amends-toolkit serve`` as a subprocess over one real API under uvicorn, two sources of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import amends_toolkit as at
from conformance._servers import serve

from .gateway import GatewayProcess
from .upstream import NOTES_DOCUMENT

pytestmark = pytest.mark.anyio

KEYS = {"first": "first-key-0c4e2a91", "second": "second-key-7d3f8b06"}


class Api:
    def __init__(self) -> None:
        self.seen: list[tuple[str | None, int]] = []

    def app(self) -> Starlette:
        async def notes(request: Request) -> JSONResponse:
            key = request.headers.get("x-api-key")
            client = request.scope["client"]
            self.seen.append((key, client[1] if client else 0))
            return JSONResponse({"heard": key})

        return Starlette(routes=[Route("/notes", notes)])


@pytest.fixture
def api_and_gateway(tmp_path: Path) -> Iterator[tuple[Api, GatewayProcess]]:
    api = Api()
    (tmp_path / "notes.json").write_text(json.dumps(NOTES_DOCUMENT))
    with serve(api.app()) as port:
        sources = "".join(
            f"""
[[sources]]
name = "{name}"
openapi = "notes.json"
base_url = "http://127.0.0.1:{port}"
headers = {{ X-Api-Key = "${{{name.upper()}_KEY}}" }}
"""
            for name in KEYS
        )
        config = tmp_path / "gateway.toml"
        config.write_text(
            sources
            + """
[policy]
allow = ["*__listNotes"]

[auth]
type = "none"
"""
        )
        process = GatewayProcess(
            config, env={f"{name.upper()}_KEY": key for name, key in KEYS.items()}
        )
        try:
            process.wait_ready()
            yield api, process
        finally:
            process.stop()


async def test_the_gateways_sources_share_one_pool_each_with_its_own_credentials(
    api_and_gateway: tuple[Api, GatewayProcess],
) -> None:
    api, gateway = api_and_gateway
    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        front = await runtime.spawn(
            at.mcp.http(name="gateway", url=gateway.wait_ready(), client=client)
        )
        answers = [await front.call(f"{name}__listNotes", {}) for name in ("first", "second") * 3]
    # What each source's API answered of its key is redacted; each request had its own key.
    assert answers == [{"heard": "[redacted]"}] * 6
    assert [key for key, _ in api.seen] == [KEYS["first"], KEYS["second"]] * 3
    first = {port for key, port in api.seen if key == KEYS["first"]}
    second = {port for key, port in api.seen if key == KEYS["second"]}
    # One after the other, the second source's request took the connection the first's left.
    assert first & second
