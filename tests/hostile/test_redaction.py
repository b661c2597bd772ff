"""No credential reaches the model: a server that repeats what it was sent (the client's
``Authorization``, an API key in its query) has those values replaced in whatever the model
reads, before the text is cut, so no cut leaves half a credential either."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Literal
from urllib.parse import quote, quote_plus, unquote

import httpx
import pytest

import amends_toolkit as at

from .peers import echo_all, head, http_peer, json_reply, mcp_echo_reply

pytestmark = pytest.mark.anyio

TOKEN = "sk-live-5f0c2b1e9a7d4c3b"
KEY = "qk-90210-abcdef"
SECRETS = (TOKEN, KEY)


GET = at.http.Operation(
    definition=at.ToolDefinition(name="get", description="Get.", input_schema={"type": "object"}),
    request=at.http.RequestTemplate(method="GET", path="/thing"),
)
"""The one operation of the API sources here."""


def client() -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, params={"api_key": KEY})


def echo_of(target: str, headers: dict[str, str], pad: int = 0) -> str:
    return "x" * pad + f"you sent {headers.get('authorization')} to {unquote(target)}"


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
        # Not half of one either.
        assert secret[: len(secret) // 2] not in text


async def answered(kind: str) -> AsyncIterator[tuple[str, str, list[str]]]:
    """An MCP peer whose tools/call answers ``kind``, echoing the request's credentials."""
    seen: list[str] = []

    async def reply(target: str, headers: dict[str, str], body: bytes) -> AsyncIterator[bytes]:
        request = json.loads(body)
        method, id_ = request.get("method"), request.get("id")
        if method == "server/discover":
            yield json_reply(
                {"jsonrpc": "2.0", "id": id_, "result": {"supportedVersions": ["2026-07-28"]}}
            )
            return
        if method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            yield json_reply({"jsonrpc": "2.0", "id": id_, "result": {"tools": [tool]}})
            return
        echo = echo_of(target, headers, pad=470)
        seen.append(echo)
        if kind == "invalid_params":
            yield json_reply(
                {"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": echo}}
            )
        elif kind == "tool_error":
            content = [{"type": "text", "text": echo}]
            yield json_reply(
                {"jsonrpc": "2.0", "id": id_, "result": {"content": content, "isError": True}}
            )
        elif kind == "other_error":
            yield json_reply({"jsonrpc": "2.0", "id": id_, "error": {"code": 7, "message": echo}})
        else:
            events = (
                "event: message\ndata: "
                + json.dumps(
                    {"jsonrpc": "2.0", "id": id_, "result": {"structuredContent": {"got": echo}}}
                )
                + "\n\n"
            ).encode()
            yield head(content_type="text/event-stream", content_length=str(len(events)))
            yield events

    async with http_peer(reply) as (url, _):
        yield url + "/mcp", kind, seen


@pytest.fixture(params=["invalid_params", "tool_error", "other_error", "success"])
async def mcp_echo(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, str, list[str]]]:
    async for peer in answered(request.param):
        yield peer


async def test_an_mcp_server_echoing_the_clients_credentials_never_shows_them(
    mcp_echo: tuple[str, str, list[str]],
) -> None:
    url, kind, seen = mcp_echo
    async with client() as http:
        source = at.mcp.http(name="echoing", url=url, client=http)
        async with source.lifespan():
            toolkit = at.source_toolkit(source, await source.discover())
            value = await toolkit.call("echo", {})
    (echo,) = seen
    assert TOKEN in echo
    assert KEY in echo
    text = json.dumps(value)
    assert_clean(text)
    assert "[redacted]" in text
    failure = at.Failure.from_json(value)
    if kind == "success":
        assert failure is None
    else:
        assert failure is not None
        assert failure.code in ("InvalidInputError", "CallFailedError")
        assert len(failure.message) <= 500


async def test_a_token_the_host_gives_its_client_later_is_redacted_too() -> None:
    rotated = "sk-live-rotated-77aa55cc"
    async for url, _, seen in answered("success"):
        async with client() as http:
            source = at.mcp.http(name="echoing", url=url, client=http)
            async with source.lifespan():
                await source.discover()
                assert_clean(json.dumps(await source.call("echo", {})))
                http.headers["Authorization"] = f"Bearer {rotated}"
                value = await source.call("echo", {})
        assert rotated in seen[-1]
        assert rotated not in json.dumps(value)
        assert "[redacted]" in json.dumps(value)


@pytest.mark.parametrize(("status", "pad"), [(404, 0), (404, 459), (200, 0)])
async def test_an_api_echoing_the_clients_credentials_never_shows_them(
    status: int, pad: int
) -> None:
    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield json_reply({"error": echo_of(target, headers, pad)}, status=status)

    async with http_peer(reply) as (url, _), client() as http:
        source = at.http.make(name="api", base_url=url, operations=[GET], client=http)
        value = await at.source_toolkit(source, await source.discover()).call("get", {})
    text = json.dumps(value)
    assert_clean(text)
    if pad == 0:
        assert "[redacted]" in text
    if status == 404:
        failure = at.Failure.from_json(value)
        assert failure is not None
        assert len(failure.message) <= 500 + len("The API answered 404 Not Found: ")


async def test_a_token_the_host_gives_its_client_later_is_redacted_by_an_api_source_too() -> None:
    rotated = "sk-live-rotated-88bb66dd"

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield json_reply({"echo": echo_of(target, headers)})

    async with http_peer(reply) as (url, _), client() as http:
        source = at.http.make(name="api", base_url=url, operations=[GET], client=http)
        toolkit = at.source_toolkit(source, await source.discover())
        assert_clean(json.dumps(await toolkit.call("get", {})))
        http.headers["Authorization"] = f"Bearer {rotated}"
        text = json.dumps(await toolkit.call("get", {}))
    assert rotated not in text
    assert "[redacted]" in text


class _Bearer(httpx.Auth):
    """A host's token given by ``client.auth`` (as an OAuth provider gives it), not a header."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


async def test_a_token_the_clients_auth_adds_is_redacted() -> None:
    by_auth = "sk-live-auth-44ee22ff"
    async for url, _, seen in answered("success"):
        async with httpx.AsyncClient(auth=_Bearer(by_auth)) as http:
            source = at.mcp.http(name="echoing", url=url, client=http)
            async with source.lifespan():
                await source.discover()
                value = await source.call("echo", {})
        assert by_auth in seen[-1]
        assert by_auth not in json.dumps(value)


async def test_a_token_an_event_hook_adds_is_redacted_by_an_api_source() -> None:
    by_hook = "sk-live-hook-33dd11aa"

    async def sign(request: httpx.Request) -> None:
        request.headers["Authorization"] = f"Bearer {by_hook}"

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield json_reply({"echo": echo_of(target, headers)})

    async with (
        http_peer(reply) as (url, _),
        httpx.AsyncClient(event_hooks={"request": [sign]}) as http,
    ):
        source = at.http.make(name="api", base_url=url, operations=[GET], client=http)
        text = json.dumps(await at.source_toolkit(source, await source.discover()).call("get", {}))
    assert "[redacted]" in text
    assert by_hook not in text


async def test_a_key_in_the_servers_url_is_redacted() -> None:
    in_url = "uk-live-url-55ff33bb"
    async for url, _, seen in answered("success"):
        async with httpx.AsyncClient() as http:
            source = at.mcp.http(name="echoing", url=f"{url}?key={in_url}", client=http)
            async with source.lifespan():
                await source.discover()
                value = await source.call("echo", {})
        assert in_url in seen[-1]
        assert in_url not in json.dumps(value)
        assert "[redacted]" in json.dumps(value)


async def mcp_echoing_all(*, decoded: bool = True) -> AsyncIterator[tuple[str, list[str]]]:
    """An MCP peer (stateless, 2026 era) whose one tool answers everything its call carried."""
    seen: list[str] = []

    def answer(target: str, headers: dict[str, str]) -> str:
        seen.append(echo_all(target, headers, decoded=decoded))
        return seen[-1]

    async with http_peer(mcp_echo_reply(answer)) as (url, _):
        yield url, seen


async def echoed(url: str, http: httpx.AsyncClient) -> str:
    """What the model reads of the echo tool's answer, over a source of the server at ``url``."""
    source = at.mcp.http(name="echoing", url=url, client=http)
    async with source.lifespan():
        await source.discover()
        return json.dumps(await source.call("echo", {}))


async def test_a_header_an_event_hook_adds_is_redacted_but_not_a_cookie() -> None:
    by_hook, cookie = "xk-live-hook-66cc44ee", "ck-server-set-11ab22cd"

    async def sign(request: httpx.Request) -> None:
        request.headers["X-Api-Key"] = by_hook

    async for url, seen in mcp_echoing_all():
        async with httpx.AsyncClient(
            event_hooks={"request": [sign]}, cookies={"sid": cookie}
        ) as http:
            text = await echoed(url + "/mcp", http)
        assert by_hook in seen[-1]
        assert by_hook not in text
        # A cookie jar holds what servers set, any number of them: no secret of the host's.
        assert f"cookie=sid={cookie}" in text
        # What the protocol and the client set by themselves is no secret.
        assert "mcp-protocol-version=2026-07-28" in text
        assert "application/json" in text
        assert "host=127.0.0.1:" in text


async def test_a_token_in_the_path_of_the_servers_url_is_redacted() -> None:
    in_path = "pk9f3a7c21e5b84d6a"
    async for url, seen in mcp_echoing_all():
        async with httpx.AsyncClient() as http:
            text = await echoed(f"{url}/api/s/{in_path}/mcp", http)
        assert in_path in seen[-1]
        assert in_path not in text
        # The path's words are no secret.
        assert "/api/s/[redacted]/mcp" in text


async def _sign_header(request: httpx.Request) -> None:
    request.headers["X-Api-Key"] = _BY_HOOK


async def _sign_query(request: httpx.Request) -> None:
    request.url = request.url.copy_add_param("sig", _BY_HOOK)


_BY_HOOK = "xk-live-hook-77dd55ff"


@pytest.mark.parametrize(
    ("sign", "location", "name", "redacted", "kept"),
    [
        (_sign_header, "header", "X-Order", "[redacted]", "x-order=order-20261201"),
        (_sign_query, "query", "order", "sig=[redacted]", "order=order-20261201"),
    ],
    ids=["header", "query"],
)
async def test_an_api_source_redacts_what_a_hook_adds_but_not_the_inputs_own(
    sign: Callable[[httpx.Request], Awaitable[None]],
    location: Literal["header", "query"],
    name: str,
    redacted: str,
    kept: str,
) -> None:
    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        yield json_reply({"echo": echo_all(target, headers)})

    tagged = at.http.Operation(
        definition=at.ToolDefinition(
            name="get",
            description="Get.",
            input_schema={"type": "object", "properties": {"order": {"type": "string"}}},
        ),
        request=at.http.RequestTemplate(
            method="GET",
            path="/thing",
            params={"order": at.http.Param(location=location, name=name)},
        ),
    )
    async with (
        http_peer(reply) as (url, _),
        httpx.AsyncClient(event_hooks={"request": [sign]}) as http,
    ):
        source = at.http.make(name="api", base_url=url, operations=[tagged], client=http)
        toolkit = at.source_toolkit(source, await source.discover())
        text = json.dumps(await toolkit.call("get", {"order": "order-20261201"}))
    assert _BY_HOOK not in text
    assert redacted in text
    assert kept in text


class _QueryKey(httpx.Auth):
    """An API key the client's ``auth`` puts in the query of each request."""

    def __init__(self, key: str) -> None:
        self.key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.url = request.url.copy_add_param("key", self.key)
        yield request


async def test_a_key_the_clients_auth_or_a_hook_puts_in_the_query_is_redacted() -> None:
    by_auth, by_hook = "qa-live-auth-88aa66cc", "qh-live-hook-99bb77dd"

    async def sign(request: httpx.Request) -> None:
        request.url = request.url.copy_add_param("sig", by_hook)

    async for url, seen in mcp_echoing_all():
        async with httpx.AsyncClient(
            auth=_QueryKey(by_auth), event_hooks={"request": [sign]}
        ) as http:
            text = await echoed(url + "/mcp?tenant=acme-north", http)
        assert by_auth in seen[-1]
        assert by_hook in seen[-1]
        assert by_auth not in text
        assert by_hook not in text
        assert "key=[redacted]" in text


async def test_the_query_of_a_redirect_is_the_servers_and_no_secret() -> None:
    # A redirect's query is what the server chose (any number of values): only the first
    # request's query holds what the client's auth or a hook put there.
    by_hook, servers = "qh-live-hook-55ff33bb", "page-token-0042"

    async def sign(request: httpx.Request) -> None:
        request.url = request.url.copy_set_param("sig", by_hook)

    async def reply(target: str, headers: dict[str, str], _b: bytes) -> AsyncIterator[bytes]:
        if target.startswith("/thing"):
            yield head(302, location=f"/moved?next={servers}", content_length="0")
        else:
            yield json_reply({"echo": echo_all(target, headers)})

    async with (
        http_peer(reply) as (url, _),
        httpx.AsyncClient(event_hooks={"request": [sign]}, follow_redirects=True) as http,
    ):
        source = at.http.make(name="api", base_url=url, operations=[GET], client=http)
        text = json.dumps(await at.source_toolkit(source, await source.discover()).call("get", {}))
    assert f"next={servers}" in text
    assert by_hook not in text


@pytest.mark.parametrize("where", ["client", "url"])
async def test_a_key_is_redacted_in_the_percent_encoded_form_a_target_carries_it_in(
    where: str,
) -> None:
    # A server may echo the target it got as it got it: the key percent-encoded, as the
    # client's query writes it (a space as +) or as the host wrote it into the address.
    key = "ck/live+key=77aa 99;é"
    async for url, seen in mcp_echoing_all(decoded=False):
        if where == "client":
            async with httpx.AsyncClient(params={"api_key": key}) as http:
                text = await echoed(f"{url}/mcp", http)
            sent = quote_plus(key, safe="")
        else:
            sent = quote(key, safe="").lower()  # as a host may write it: any case of hex
            async with httpx.AsyncClient() as http:
                text = await echoed(f"{url}/mcp?key={sent}", http)
        assert sent in seen[-1]
        for form in (key, quote(key, safe=""), quote_plus(key, safe=""), sent):
            assert form not in text
        assert "[redacted]" in text


@pytest.mark.parametrize("module", ["httpx", "httpx2"])
async def test_the_query_of_the_servers_url_is_sent_beside_the_clients_own_params(
    module: str,
) -> None:
    # httpx (and httpx2) replace a URL's query with the client's params: the key the host
    # wrote into the server's URL must still be sent, and the client's parameter too.
    http_module = pytest.importorskip(module)
    async for url, seen in mcp_echoing_all():
        async with http_module.AsyncClient(params={"tenant": "acme"}) as http:
            text = await echoed(f"{url}/mcp?key=uk-live-77cc&tenant=url-wins", http)
        target = seen[-1].split(" ", 1)[0]
        assert "key=uk-live-77cc" in target
        assert "tenant=url-wins" in target
        assert "tenant=acme" not in target
        assert "uk-live-77cc" not in text


@pytest.mark.parametrize("written", ["é/live-key-77", "ck live/key-77", 'ck"live/key<77>'])
async def test_a_key_written_raw_into_the_url_is_redacted_as_the_client_sends_it(
    written: str,
) -> None:
    # Written as it is into the address, the key goes out with the characters a URL's query
    # cannot carry percent-encoded (non-ASCII, a space, '"', '<', '>') and the rest as written
    # ('/' among them): a form neither as written nor fully percent-encoded.
    async for url, seen in mcp_echoing_all(decoded=False):
        async with httpx.AsyncClient() as http:
            text = await echoed(f"{url}/mcp?key={written}", http)
        sent = str(httpx.URL(f"{url}/mcp?key={written}")).partition("key=")[2]
        assert sent in seen[-1]
        assert sent not in text
        assert "[redacted]" in text
