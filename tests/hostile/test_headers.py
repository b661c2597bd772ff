"""The model gives values, never framing: no header that frames, routes or authorizes a request
can be a parameter, whether a template is written by hand or read from an OpenAPI document."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

import amends_toolkit as at

from .peers import head, http_peer

REFUSED = [
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Keep-Alive",
    "TE",
    "Trailer",
    "Upgrade",
    "Expect",
    "Proxy-Authorization",
    "Proxy-Connection",
    "Cookie",
    "Authorization",
    "Forwarded",
    "X-Forwarded-Host",
    "X-Forwarded-For",
    "X-HTTP-Method-Override",
    "Content-Type",
    "Accept-Encoding",
    "X-API-Key",
]


@pytest.mark.parametrize("name", [*REFUSED, "host", "TRANSFER-ENCODING"])
def test_a_template_refuses_a_framing_routing_or_credential_header(name: str) -> None:
    with pytest.raises(ValueError, match="may not set it"):
        at.http.RequestTemplate(
            method="POST",
            path="/items",
            params={"value": at.http.Param(location="header", name=name)},
        )


def test_a_stored_catalog_with_such_a_header_does_not_load() -> None:
    data = {
        "method": "GET",
        "path": "/",
        "params": {"h": {"in": "header", "name": "Transfer-Encoding"}},
        "body": None,
    }
    with pytest.raises(at.CatalogError, match="may not set it"):
        at.catalog.load(at.http.RequestTemplate, data)


@pytest.mark.parametrize("name", ["X-Trace", "If-Match", "Idempotency-Key", "Range"])
def test_a_template_takes_an_ordinary_header(name: str) -> None:
    template = at.http.RequestTemplate(
        method="GET", path="/", params={"value": at.http.Param(location="header", name=name)}
    )
    assert template.params["value"].name == name


def document(header: str, *, required: bool = False) -> at.JsonObject:
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/items": {
                "get": {
                    "operationId": "list_items",
                    "parameters": [
                        {
                            "name": header,
                            "in": "header",
                            "required": required,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
                "post": {
                    "operationId": "plain",
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
    }


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in REFUSED
        # OpenAPI itself says these header parameters are ignored: the client sets them.
        if n not in ("Authorization", "Content-Type")
    ],
)
def test_the_reader_skips_an_operation_with_such_a_header_and_says_why(name: str) -> None:
    read = at.openapi.read_operations(document(name))
    assert [o.definition.name for o in read.operations] == ["plain"]
    (skipped,) = read.skipped
    assert (skipped.method, skipped.path, skipped.reason) == ("GET", "/items", "header_parameter")
    assert name in skipped.detail


@pytest.mark.anyio
async def test_a_model_cannot_smuggle_framing_onto_the_wire() -> None:
    """Against a real server: what arrives is framed by the client alone."""
    seen: list[dict[str, str]] = []

    async def record(_t: str, headers: dict[str, str], _body: bytes) -> AsyncIterator[bytes]:
        seen.append(headers)
        yield head(content_type="application/json", content_length="2") + b"{}"

    operation = at.http.Operation(
        definition=at.ToolDefinition(
            name="create",
            description="Create.",
            input_schema={"type": "object", "properties": {"trace": {}, "body": {}}},
        ),
        request=at.http.RequestTemplate(
            method="POST",
            path="/items",
            params={"trace": at.http.Param(location="header", name="X-Trace")},
            body="body",
        ),
    )
    async with http_peer(record) as (url, bodies), httpx.AsyncClient() as client:
        source = at.http.make(name="api", base_url=url, operations=[operation], client=client)
        assert await source.call("create", {"trace": "t", "body": {"a": 1}}) == {}
        with pytest.raises(at.InvalidInputError):
            await source.call("create", {"trace": "t\r\nTransfer-Encoding: chunked", "body": 1})
    (headers,) = seen
    assert headers["content-length"] == str(len(bodies[0]))
    assert "transfer-encoding" not in headers
    assert headers["x-trace"] == "t"
