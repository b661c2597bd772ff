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
# Credentials and identities, each refused by one entry of the list alone (a word of a name or
# a name), so that taking any entry out fails a test: vendors' API keys and tokens, webhook
# signatures, CSRF tokens, and what an authenticating proxy says of the caller.
CREDENTIALS = [
    "Private-Token",  # GitLab: "token"
    "X-Goog-Api-Key",  # "key"
    "X-Octopus-ApiKey",  # "apikey"
    "X-Hasura-Admin-Secret",  # "secret"
    "X-Hub-Signature-256",  # GitHub webhooks: "signature"
    "X-Shopify-Hmac-Sha256",  # "hmac"
    "X-Password",  # "password"
    "X-GitHub-OTP",  # "otp"
    "X-Credential-Identifier",  # Kong: "credential"
    "X-Sentry-Auth",  # "auth"
    "X-Authorization",  # "authorization"
    "Authentication",  # "authentication"
    "X-Goog-Authenticated-User-Email",  # Google IAP: "authenticated"
    "X-MS-Client-Principal",  # Azure App Service: "principal"
    "X-Amzn-Oidc-Data",  # AWS ALB: "oidc"
    "X-Userinfo",  # Kong OIDC: "userinfo"
    "Cf-Access-Jwt-Assertion",  # Cloudflare Access: "jwt"
    "X-Transmission-Session-Id",  # "session"
    "X-CSRFToken",  # Django: "csrftoken"
    "Cookie",  # "cookie"
    "Remote-User",
    "X-Remote-User",
    "X-WEBAUTH-USER",
    "X-Consumer-ID",
    "X-Consumer-Custom-ID",
    "X-Consumer-Username",
    "X-Honeycomb-Team",
    "X-JFrog-Art-Api",
    "X-Firebase-AppCheck",
    "ServiceBusAuthorization",
]
# What the issue found the model could fill, and the well-known others (case does not matter).
VENDORS = [
    "Ocp-Apim-Subscription-Key",
    "x-auth-token",
    "X-Access-Token",
    "X-Amz-Security-Token",
    "X-Api-Token",
    "X-Vault-Token",
    "X-Figma-Token",
    "X-Shopify-Access-Token",
    "X-Csrf-Token",
    "X-XSRF-TOKEN",
    "Api-Key",
    "X-Functions-Key",
    "DD-API-KEY",
    "X-Hub-Signature",
    "Stripe-Signature",
    "X-Slack-Signature",
    "X-Gitlab-Token",
    "JOB-TOKEN",
    "X-Rapidapi-Key",
    "X-CMC_PRO_API_KEY",
    "X-Amz-Server-Side-Encryption-Customer-Key",
    "Proxy-Authorization",
]
# Addresses a server may take for the client's own.
ADDRESSES = [
    "X-Host",
    "X-Original-Host",
    "X-Forwarded",
    "CF-Connecting-IP",
    "Fastly-Client-IP",
    "X-Cluster-Client-IP",
    "X-Originating-IP",
    "X-Remote-IP",
    "X-Remote-Addr",
]


@pytest.mark.parametrize(
    "name", [*REFUSED, *CREDENTIALS, *VENDORS, *ADDRESSES, "host", "TRANSFER-ENCODING"]
)
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


@pytest.mark.parametrize(
    "name",
    [
        "X-Trace",
        "If-Match",
        "Range",
        # A word says what the key or token is for: it is no credential.
        "Idempotency-Key",
        "X-Continuation-Token",
        "X-Next-Page-Token",
        # Words are whole: "key" in a longer word is none.
        "X-Keyword",
        "X-Tokenizer",
        "X-Sessions-Limit",
    ],
)
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
        for n in [*REFUSED, *CREDENTIALS, *VENDORS, *ADDRESSES]
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


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Private-Token", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key"])
async def test_a_read_credential_header_never_reaches_the_wire_with_the_models_value(
    name: str,
) -> None:
    """Against a real server: the operation that would send the model's credential is no tool;
    the model's call of it is answered without a request, and the others still work."""
    seen: list[dict[str, str]] = []

    async def record(_t: str, headers: dict[str, str], _body: bytes) -> AsyncIterator[bytes]:
        seen.append(headers)
        yield head(content_type="application/json", content_length="2") + b"{}"

    read = at.openapi.read_operations(document(name))
    async with http_peer(record) as (url, _), httpx.AsyncClient() as client:
        source = at.http.make(name="api", base_url=url, operations=read.operations, client=client)
        toolkit = at.assemble([at.Member(source, await source.discover())], lambda _s, _d: "allow")
        answer = await toolkit.call("api__list_items", {name: "the attacker's token"})
        assert await toolkit.call("api__plain", {}) == {}
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert [sorted(headers) for headers in seen] == [sorted(seen[0])]
    assert name.lower() not in seen[0]
