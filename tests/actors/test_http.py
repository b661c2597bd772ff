"""The HTTP source, over httpx.MockTransport and over the wire against a Starlette app under
uvicorn on 127.0.0.1, with an httpx and an httpx2 client: every request and response rule."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

import anyio
import attrs
import httpx
import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import amends_toolkit as at
from amends_toolkit._content import Media, content_parts
from amends_toolkit.actors._http import _CLIENT_ERRORS, client_error

CHUNK = b"x" * 16_384
SSL_CONTEXT = ssl.create_default_context()


@attrs.frozen
class Recorded:
    """A request as the API received it, with the path and query as they were on the wire."""

    method: str
    raw_path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


@attrs.define
class Reply:
    status: int = 200
    headers: list[tuple[str, str]] = attrs.field(
        factory=lambda: [("content-type", "application/json")]
    )
    body: bytes = b'{"ok": true}'
    hang: bool = False
    # Stream this many CHUNKs after the body, counting the ones produced.
    chunks: int = 0


class Api:
    """What the API answers next, and every request it received (both servers share one).

    Each test reaches the API under a path of its own (``prefix``, new at each ``reset``), so a
    request an earlier test left in flight on the module's one server is never counted as this
    test's: it is answered and not recorded."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.reply = Reply()
        self.produced = 0
        self.tests = 0
        self.prefix = "/test-0"

    def reset(self) -> None:
        self.requests.clear()
        self.reply = Reply()
        self.produced = 0
        self.tests += 1
        self.prefix = f"/test-{self.tests}"

    def record(self, method: str, raw: bytes, headers: list[tuple[str, str]], body: bytes) -> Reply:
        path, _, query = raw.decode("ascii").partition("?")
        if not path.startswith(self.prefix + "/"):
            return Reply()
        path = path.removeprefix(self.prefix)
        self.requests.append(Recorded(method, path, query, headers, body))
        return self.reply

    async def stream(
        self, reply: Reply, disconnected: Callable[[], Awaitable[bool]] | None = None
    ) -> AsyncIterator[bytes]:
        yield reply.body
        for _ in range(reply.chunks):
            if disconnected is not None and await disconnected():
                return
            self.produced += 1
            yield CHUNK


def starlette_app(api: Api) -> Starlette:
    async def endpoint(request: Request) -> Response:
        raw = request.scope["raw_path"] + (
            b"?" + request.scope["query_string"] if request.scope["query_string"] else b""
        )
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]
        reply = api.record(request.method, raw, headers, await request.body())
        if reply.hang:
            while (await request.receive())["type"] != "http.disconnect":
                pass
        return StreamingResponse(
            api.stream(reply, request.is_disconnected),
            status_code=reply.status,
            headers=dict(reply.headers),
        )

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", endpoint, methods=methods)])


@pytest.fixture(scope="module")
def wire() -> Iterator[tuple[Api, str]]:
    """The Starlette app under uvicorn on 127.0.0.1:0, once for the module."""
    api = Api()
    config = uvicorn.Config(
        starlette_app(api), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    # uvicorn offers no callback for "listening"; its flag is the documented way to wait.
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield api, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


Kind = Literal["httpx", "httpx2"]


@attrs.define
class Setup:
    """One way of reaching the API: a transport ("mock" or "wire") and a client library."""

    api: Api
    base_url: str
    transport: str
    kind: Kind

    @asynccontextmanager
    async def client(self, **options: object) -> AsyncIterator[at.http.AsyncClient]:
        module = httpx if self.kind == "httpx" else httpx2
        if self.transport == "mock":
            options["transport"] = module.MockTransport(self._handler(module))
        else:
            # One SSL context for every client: building one per test is most of its time.
            options.setdefault("verify", SSL_CONTEXT)
        async with module.AsyncClient(**options) as client:
            yield client

    def _handler(self, module: object) -> Callable[[httpx.Request], object]:
        api = self.api

        async def handle(request: httpx.Request) -> httpx.Response:
            headers = [(k, v) for k, v in request.headers.multi_items()]
            reply = api.record(request.method, request.url.raw_path, headers, await request.aread())
            if reply.hang:
                await anyio.sleep_forever()
            response: httpx.Response = module.Response(  # type: ignore[attr-defined]
                reply.status, headers=reply.headers, content=api.stream(reply)
            )
            return response

        return handle


@pytest.fixture(params=["mock-httpx", "mock-httpx2", "wire-httpx", "wire-httpx2"])
def setup(request: pytest.FixtureRequest, wire: tuple[Api, str]) -> Setup:
    transport, kind = request.param.split("-")
    api, url = wire if transport == "wire" else (Api(), "http://api.test")
    api.reset()
    return Setup(api=api, base_url=url + api.prefix, transport=transport, kind=kind)


def definition(name: str) -> at.ToolDefinition:
    return at.ToolDefinition(name=name, description=name, input_schema={"type": "object"})


ITEM = at.http.Operation(
    definition=definition("get_item"),
    request=at.http.RequestTemplate(
        method="GET",
        path="/items/{id}",
        params={
            "item_id": at.http.Param(location="path", name="id"),
            "tags": at.http.Param(location="query", name="tag"),
            "q": at.http.Param(location="query", name="q"),
            "trace": at.http.Param(location="header", name="X-Trace"),
        },
    ),
)
CREATE = at.http.Operation(
    definition=definition("create_item"),
    request=at.http.RequestTemplate(
        method="POST",
        path="/shops/{shop}/items",
        params={
            "shop": at.http.Param(location="path", name="shop"),
            "request_id": at.http.Param(location="header", name="X-Request-Id"),
        },
        body="body",
    ),
)
PLAIN = at.http.Operation(
    definition=definition("ping"), request=at.http.RequestTemplate(method="DELETE", path="/ping")
)
OPERATIONS = [ITEM, CREATE, PLAIN]


@asynccontextmanager
async def source_for(setup: Setup, **options: object) -> AsyncIterator[at.http.HttpSource]:
    client_options = options.pop("client_options", {})
    assert isinstance(client_options, dict)
    async with setup.client(**client_options) as client:
        yield at.http.make(
            name="shop",
            base_url=setup.base_url + "/v1",
            operations=OPERATIONS,
            client=client,
            **options,  # type: ignore[arg-type]
        )


# --- requests -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_request_fills_path_query_header_and_body(setup: Setup) -> None:
    async with source_for(setup) as source:
        assert await source.call(
            "get_item", {"item_id": "a b:é", "tags": ["x", 2, True], "q": 1.5, "trace": "t-1"}
        ) == {"ok": True}
        await source.call("create_item", {"shop": 7, "body": {"name": "ß", "n": [1, None]}})
    get, post = setup.api.requests
    assert (get.method, get.raw_path) == ("GET", "/v1/items/a%20b%3A%C3%A9")
    assert get.raw_query == "tag=x&tag=2&tag=true&q=1.5"
    assert get.header("x-trace") == ["t-1"]
    assert get.body == b""
    assert (post.method, post.raw_path, post.raw_query) == ("POST", "/v1/shops/7/items", "")
    assert json.loads(post.body) == {"name": "ß", "n": [1, None]}
    assert post.header("content-type") == ["application/json"]


@pytest.mark.anyio
async def test_a_missing_or_null_query_or_header_is_left_out(setup: Setup) -> None:
    async with source_for(setup) as source:
        await source.call("get_item", {"item_id": "1", "q": None, "trace": None})
        await source.call("get_item", {"item_id": "1", "tags": []})
    first, second = setup.api.requests
    assert (first.raw_query, first.header("x-trace")) == ("", [])
    assert second.raw_query == ""


@pytest.mark.anyio
async def test_a_header_list_is_joined_by_commas(setup: Setup) -> None:
    async with source_for(setup) as source:
        await source.call("get_item", {"item_id": "1", "trace": ["a", 1, False]})
    assert setup.api.requests[0].header("x-trace") == ["a, 1, false"]


@pytest.mark.anyio
async def test_query_values_are_encoded_never_sent_raw(setup: Setup) -> None:
    async with source_for(setup) as source:
        await source.call("get_item", {"item_id": "1", "q": "a&b=c#d\r\n\x00é"})
    raw = setup.api.requests[0].raw_query
    assert raw.startswith("q=a%26b%3Dc%23d")
    assert "%0D%0A%00" in raw.upper()
    assert "%C3%A9" in raw.upper()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "may not be empty"),
        (".", "one segment of the path"),
        ("..", "one segment of the path"),
        ("1/secret", "one segment of the path"),
        (None, "is required"),
        ([], "may not be an empty list"),
        ({}, "may not be an empty object"),
        (["."], "one segment of the path"),
        ([["a"]], "not a nested list"),
        ({"a": {"b": 1}}, "values must be strings"),
    ],
)
async def test_a_path_value_that_would_change_the_path_is_refused(
    setup: Setup, value: at.JsonValue, why: str
) -> None:
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidInputError, match=why) as caught:
            await source.call("get_item", {"item_id": value})
    assert caught.value.model_message.startswith("'item_id'")
    assert setup.api.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\x00b", "é", " a", "a\t"])
async def test_a_header_value_that_could_add_a_header_is_refused(setup: Setup, value: str) -> None:
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidInputError, match="sent as a header"):
            await source.call("get_item", {"item_id": "1", "trace": value})
        with pytest.raises(at.InvalidInputError, match="sent as a header"):
            await source.call("get_item", {"item_id": "1", "trace": ["ok", value]})
    assert setup.api.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"a": [1]}, "'q' is an object whose values must be strings"),
        ([["a"]], "'q' must be a string, a number"),
        ([{"a": 1}], "'q' must be a string, a number"),
    ],
)
async def test_a_query_value_must_be_a_string_number_or_boolean_or_a_list_or_object_of_them(
    setup: Setup, value: at.JsonValue, why: str
) -> None:
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidInputError, match=why):
            await source.call("get_item", {"item_id": "1", "q": value})
    assert setup.api.requests == []


@pytest.mark.anyio
async def test_the_clients_own_headers_come_last_and_win(setup: Setup) -> None:
    options = {"client_options": {"headers": {"X-Request-Id": "host-1", "X-Trace": "host"}}}
    async with source_for(setup, **options) as source:
        await source.call("create_item", {"shop": "s", "request_id": "model-1", "body": 1})
        await source.call("get_item", {"item_id": "1", "trace": "model"})
    post, get = setup.api.requests
    assert post.header("x-request-id") == ["host-1"]
    assert get.header("x-trace") == ["host"]


@pytest.mark.anyio
@pytest.mark.parametrize("asked", [None, "br, gzip", "gzip"])
async def test_only_the_codings_the_source_reads_are_asked_for(
    setup: Setup, asked: str | None
) -> None:
    # Whatever the client asks for by itself (its default is gzip and deflate), each request
    # asks for gzip and deflate once: a body in another coding could not be read.
    options = {"client_options": {"headers": {} if asked is None else {"Accept-Encoding": asked}}}
    async with source_for(setup, **options) as source:
        await source.call("ping", {})
        await source.call("get_item", {"item_id": "1", "trace": "t", "q": "x"})
    assert [r.header("accept-encoding") for r in setup.api.requests] == [["gzip, deflate"]] * 2


@pytest.mark.anyio
async def test_the_clients_own_query_parameters_win(setup: Setup) -> None:
    options = {"client_options": {"params": {"q": "host-key"}}}
    async with source_for(setup, **options) as source:
        await source.call("get_item", {"item_id": "1", "q": "model", "tags": ["a"]})
    assert setup.api.requests[0].raw_query == "q=host-key&tag=a"


@pytest.mark.anyio
@pytest.mark.parametrize("params", [None, {"k": "v"}])
async def test_a_path_without_placeholders_is_given_to_the_client_parsed_once(
    setup: Setup, params: dict[str, str] | None
) -> None:
    # Its URL is the client's own, made once (a string is parsed anew on every request); every
    # request goes where the string would, with the client's own query merged as it merges it.
    given: list[object] = []
    async with setup.client(params=params) as client:
        stream = client.stream

        def recording(method: str, url: str, **options: object) -> object:
            given.append(url)
            return stream(method, url, **options)  # type: ignore[arg-type]

        # On the instance: its class's stream is still the library's.
        client.stream = recording  # type: ignore[method-assign,assignment]
        source = at.http.make(
            name="shop", base_url=setup.base_url + "/v1", operations=OPERATIONS, client=client
        )
        calls: list[tuple[str, at.JsonObject]] = [
            ("ping", {}),
            ("ping", {}),
            ("get_item", {"item_id": "1"}),
        ]
        for tool, input in calls:
            await source.call(tool, input)
    first, again, item = given
    assert isinstance(first, httpx.URL if setup.kind == "httpx" else httpx2.URL)
    assert again is first
    assert item == f"{setup.base_url}/v1/items/1"
    query = "" if params is None else "k=v"
    assert [(r.method, r.raw_path, r.raw_query) for r in setup.api.requests] == [
        ("DELETE", "/v1/ping", query),
        ("DELETE", "/v1/ping", query),
        ("GET", "/v1/items/1", query),
    ]


@pytest.mark.anyio
async def test_an_unknown_tool_is_not_found(setup: Setup) -> None:
    async with source_for(setup) as source:
        with pytest.raises(at.NotFoundError) as caught:
            await source.call("nope", {})
    assert caught.value.source == "shop"


@pytest.mark.anyio
async def test_discover_gives_the_definitions_and_contacts_nothing(setup: Setup) -> None:
    async with source_for(setup) as source:
        assert [d.name for d in await source.discover()] == ["get_item", "create_item", "ping"]
    assert setup.api.requests == []


# --- answers --------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("application/json", b'{"a": [1, 2]}', {"a": [1, 2]}),
        ("application/problem+json; charset=utf-8", b'"x"', "x"),
        ("text/plain; charset=utf-8", b"hello \xc3\xa9", "hello é"),
        ("text/plain; charset=latin-1", b"caf\xe9", "café"),
        ("application/json", b"", None),
        (None, b"", None),
        (None, b"plain", "plain"),
    ],
)
async def test_a_success_is_json_text_or_null(
    setup: Setup, content_type: str | None, body: bytes, expected: at.JsonValue
) -> None:
    setup.api.reply = Reply(
        status=200, headers=[("content-type", content_type)] if content_type else [], body=body
    )
    async with source_for(setup) as source:
        assert await source.call("ping", {}) == expected


@pytest.mark.anyio
async def test_a_no_content_answer_is_null(setup: Setup) -> None:
    setup.api.reply = Reply(status=204, headers=[], body=b"")
    async with source_for(setup) as source:
        assert await source.call("ping", {}) is None


@pytest.mark.anyio
async def test_a_json_answer_that_is_not_json_is_an_invalid_response(setup: Setup) -> None:
    setup.api.reply = Reply(body=b"{not json")
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidResponseError):
            await source.call("ping", {})


@pytest.mark.anyio
async def test_an_answer_that_is_not_text_is_an_invalid_response(setup: Setup) -> None:
    setup.api.reply = Reply(headers=[("content-type", "text/plain")], body=b"\x89PNG\r\n\xff\xfe")
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidResponseError, match="not text"):
            await source.call("ping", {})


PNG = b"\x89PNG\r\n\x1a\n\xff\xfe" * 30


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content_type", "kind"),
    [("image/png", "image"), ("audio/mpeg; x=1", "audio"), ("application/pdf", "resource")],
)
async def test_an_image_a_sound_or_a_pdf_is_a_content_block_of_its_bytes(
    setup: Setup, content_type: str, kind: str
) -> None:
    setup.api.reply = Reply(headers=[("content-type", content_type)], body=PNG)
    async with source_for(setup) as source:
        answer = await source.call("ping", {})
    [part] = content_parts(answer) or []
    assert isinstance(part, Media)
    assert part.decoded() == PNG
    assert part.mime_type == content_type.split(";")[0]
    assert isinstance(answer, list)
    assert isinstance(answer[0], dict)
    assert answer[0]["type"] == kind


@pytest.mark.anyio
async def test_an_svg_image_is_text_the_model_reads(setup: Setup) -> None:
    # SVG is XML: the model reads it as text, and no model API takes it as an image.
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><circle r="1"/></svg>'
    setup.api.reply = Reply(headers=[("content-type", "image/svg+xml")], body=svg)
    async with source_for(setup) as source:
        assert await source.call("ping", {}) == svg.decode()


@pytest.mark.anyio
async def test_media_longer_than_the_limit_in_base64_is_too_long(setup: Setup) -> None:
    setup.api.reply = Reply(headers=[("content-type", "image/png")], body=PNG, chunks=6_000)
    async with source_for(setup, max_answer_length=50_000) as source:
        with pytest.raises(at.CallFailedError, match="longer than 50000 characters"):
            await source.call("ping", {})
    # 6,000 chunks are 98 MB; the source stops after about 3 of them (TCP buffers a few more).
    assert setup.api.produced < 400
    # Exactly the limit in base64 is read.
    setup.api.reply = Reply(headers=[("content-type", "image/png")], body=b"\x89" * 300)
    async with source_for(setup, max_answer_length=400) as source:
        assert isinstance(await source.call("ping", {}), list)
    # One byte more is 404 characters of base64: too long, though 301 bytes are under 400.
    setup.api.reply = Reply(headers=[("content-type", "image/png")], body=b"\x89" * 301)
    async with source_for(setup, max_answer_length=400) as source:
        with pytest.raises(at.CallFailedError, match="longer than 400 characters"):
            await source.call("ping", {})


@pytest.mark.anyio
@pytest.mark.parametrize("status", [401, 403])
async def test_401_and_403_are_authentication_errors(setup: Setup, status: int) -> None:
    setup.api.reply = Reply(status=status, body=b'{"error": "token expired at https://idp"}')
    async with source_for(setup) as source:
        with pytest.raises(at.AuthenticationError) as caught:
            await source.call("ping", {})
    assert not caught.value.retryable
    assert "idp" not in caught.value.model_message


@pytest.mark.anyio
@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 599])
async def test_408_429_and_5xx_are_unavailable_and_their_body_is_not_read(
    setup: Setup, status: int
) -> None:
    setup.api.reply = Reply(status=status, body=b"internal host db-7.corp", chunks=3)
    async with source_for(setup) as source:
        with pytest.raises(at.UnavailableError) as caught:
            await source.call("ping", {})
    error = caught.value
    assert error.retryable
    assert error.retry_after is None
    assert "db-7" not in error.model_message
    assert "db-7" not in error.message
    assert error.to_failure().message == at.UnavailableError.default_message


@pytest.mark.anyio
async def test_retry_after_in_seconds_is_read(setup: Setup) -> None:
    setup.api.reply = Reply(status=429, headers=[("retry-after", "120")], body=b"")
    async with source_for(setup) as source:
        with pytest.raises(at.UnavailableError) as caught:
            await source.call("ping", {})
    assert caught.value.retry_after == 120.0


@pytest.mark.anyio
async def test_retry_after_as_an_http_date_is_read_as_seconds(setup: Setup) -> None:
    when = datetime.now(UTC) + timedelta(seconds=90)
    setup.api.reply = Reply(
        status=503, headers=[("retry-after", format_datetime(when, usegmt=True))], body=b""
    )
    async with source_for(setup) as source:
        with pytest.raises(at.UnavailableError) as caught:
            await source.call("ping", {})
    assert caught.value.retry_after is not None
    assert 80 <= caught.value.retry_after <= 90


@pytest.mark.anyio
async def test_retry_after_that_cannot_be_read_is_none(setup: Setup) -> None:
    setup.api.reply = Reply(status=503, headers=[("retry-after", "soon")], body=b"")
    async with source_for(setup) as source:
        with pytest.raises(at.UnavailableError) as caught:
            await source.call("ping", {})
    assert caught.value.retry_after is None


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 404, 409, 422, 499])
async def test_other_4xx_are_failed_calls_with_the_apis_words_cut_to_500(
    setup: Setup, status: int
) -> None:
    words = '{"message": "name is taken", "pad": "' + "p" * 2000 + '"}'
    setup.api.reply = Reply(status=status, body=words.encode(), chunks=2_000)
    async with source_for(setup) as source:
        with pytest.raises(at.CallFailedError) as caught:
            await source.call("ping", {})
    message = caught.value.model_message
    assert message.startswith(f"The API answered {status}")
    assert '"message": "name is taken"' in message
    assert message.endswith(words[:499] + "…")
    assert setup.api.produced < 400


@pytest.mark.anyio
async def test_a_failed_call_without_words_says_the_status(setup: Setup) -> None:
    setup.api.reply = Reply(status=404, headers=[], body=b"")
    async with source_for(setup) as source:
        with pytest.raises(at.CallFailedError) as caught:
            await source.call("ping", {})
    assert caught.value.model_message == "The API answered 404 Not Found."


@pytest.mark.anyio
async def test_a_redirect_the_client_did_not_follow_is_an_invalid_response(setup: Setup) -> None:
    setup.api.reply = Reply(status=302, headers=[("location", "/elsewhere")], body=b"")
    async with source_for(setup) as source:
        with pytest.raises(at.InvalidResponseError):
            await source.call("ping", {})


@pytest.mark.anyio
async def test_an_answer_too_long_is_a_failed_call_read_no_further_than_needed(
    setup: Setup,
) -> None:
    setup.api.reply = Reply(headers=[("content-type", "text/plain")], body=b"", chunks=6_000)
    async with source_for(setup, max_answer_length=50_000) as source:
        with pytest.raises(
            at.CallFailedError, match=r"longer than 50000 characters\. Ask for less"
        ):
            await source.call("ping", {})
    # 6,000 chunks are 98 MB; the source stops after about 4 of them (TCP buffers a few more).
    assert setup.api.produced < 400


@pytest.mark.anyio
async def test_an_answer_of_exactly_the_limit_is_read(setup: Setup) -> None:
    setup.api.reply = Reply(headers=[("content-type", "text/plain")], body="é".encode() * 10)
    async with source_for(setup, max_answer_length=10) as source:
        assert await source.call("ping", {}) == "é" * 10
    setup.api.reply = Reply(headers=[("content-type", "text/plain")], body="é".encode() * 11)
    async with source_for(setup, max_answer_length=10) as source:
        with pytest.raises(at.CallFailedError):
            await source.call("ping", {})


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_call_past_the_timeout_is_unavailable(setup: Setup) -> None:
    setup.api.reply = Reply(hang=True)
    # With the client's own timeouts as they are (httpx's 5 seconds): the source's one
    # deadline ends the call.
    async with source_for(setup, timeout=30.0) as source:
        started = anyio.current_time()
        with pytest.raises(at.UnavailableError) as caught:
            await source.call("ping", {})
        assert anyio.current_time() - started == pytest.approx(30.0)
    assert caught.value.retryable


@pytest.mark.anyio
@pytest.mark.virtual_clock
async def test_a_cancelled_call_is_cancelled_not_an_error(setup: Setup) -> None:
    setup.api.reply = Reply(hang=True)
    async with source_for(setup) as source:
        with anyio.move_on_after(0.2) as scope:
            await source.call("ping", {})
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_an_unreachable_api_is_unavailable() -> None:
    with _closed_port() as port:
        async with httpx.AsyncClient() as client:
            source = at.http.make(
                name="shop", base_url=f"http://127.0.0.1:{port}", operations=[PLAIN], client=client
            )
            with pytest.raises(at.UnavailableError) as caught:
                await source.call("ping", {})
    assert "127.0.0.1" not in caught.value.model_message


@contextmanager
def _closed_port() -> Iterator[int]:
    # A bound socket that does not listen: a connection to it is refused, and no one else
    # can take the port meanwhile.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# --- errors of the client and options --------------------------------------------------------


def _subclasses(root: type[BaseException]) -> list[type[BaseException]]:
    found, todo = [], [root]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_every_error_of_the_client_is_mapped_to_a_reason(module: object) -> None:
    root: type[BaseException] = module.HTTPError  # type: ignore[attr-defined]
    for cls in _subclasses(root):
        if cls.__name__ == "HTTPStatusError":
            continue  # raised only by raise_for_status, which the source never calls
        error = cls.__new__(cls)
        assert client_error(error) is not None, cls
    assert client_error(module.ConnectError("x")) is at.UnavailableError  # type: ignore[attr-defined]
    assert client_error(module.ReadTimeout("x")) is at.UnavailableError  # type: ignore[attr-defined]
    assert client_error(module.RemoteProtocolError("x")) is at.InvalidResponseError  # type: ignore[attr-defined]
    assert client_error(ValueError("x")) is None
    assert set(_CLIENT_ERRORS.values()) <= {
        at.UnavailableError,
        at.InvalidResponseError,
        at.UnknownError,
    }


@pytest.mark.anyio
async def test_a_broken_answer_on_the_wire_is_an_invalid_response() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        source = at.http.make(name="s", base_url="http://x", operations=[PLAIN], client=client)
        with pytest.raises(at.InvalidResponseError):
            await source.call("ping", {})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": ""}, "name must be"),
        ({"base_url": "ftp://x"}, "absolute http"),
        ({"base_url": "/relative"}, "absolute http"),
        ({"base_url": "http://x/?a=1"}, "query or a fragment"),
        ({"timeout": 0}, "timeout must be"),
        ({"timeout": float("inf")}, "timeout must be"),
        ({"max_answer_length": 0}, "max_answer_length"),
        ({"max_body_size": 0}, "max_body_size must be a positive whole number"),
        ({"max_body_size": True}, "max_body_size must be a positive whole number"),
        ({"operations": [PLAIN, PLAIN]}, r"share names \['ping'\]"),
        ({"operations": ["GET /"]}, "at.http.Operation"),
        ({"base_url": "http://x:port/v1"}, "^base_url is not a URL the client can send to"),
        ({"base_url": "http://x/v1\udcff"}, "^base_url is not a URL the client can send to"),
    ],
)
def test_bad_options_are_refused_when_the_source_is_made(
    options: dict[str, object], message: str
) -> None:
    arguments: dict[str, object] = {
        "name": "s",
        "base_url": "http://x",
        "operations": [PLAIN],
        "client": httpx.AsyncClient(verify=SSL_CONTEXT),
    } | options
    with pytest.raises(ValueError, match=message):
        at.http.make(**arguments)  # type: ignore[arg-type]


def test_httpx_and_httpx2_clients_are_both_clients_of_the_source() -> None:
    # mypy checks this function: each client type fits the protocol the source takes.
    def clients(a: httpx.AsyncClient, b: httpx2.AsyncClient) -> list[at.http.AsyncClient]:
        return [a, b]

    assert callable(clients)


@pytest.mark.anyio
async def test_a_client_whose_own_stream_reads_the_url_as_a_string_is_given_the_string(
    wire_setup: Setup,
) -> None:
    # A host's subclass may read the URL it is given as the string the client protocol promises
    # (to sign the request's path): it is never given the client's parsed URL.
    module = httpx if wire_setup.kind == "httpx" else httpx2
    signed: list[str] = []

    class Signing(module.AsyncClient):  # type: ignore[name-defined,misc]
        def stream(self, method: str, url: str, **options: object) -> object:
            path = urlsplit(url).path
            signed.append(path)
            headers = [
                *cast("list[tuple[str, str]]", options.pop("headers") or []),
                ("X-Signed", path),
            ]
            return super().stream(method, url, headers=headers, **options)

    async with Signing(verify=SSL_CONTEXT) as client:
        source = at.http.make(
            name="shop", base_url=wire_setup.base_url + "/v1", operations=OPERATIONS, client=client
        )
        await source.call("ping", {})
        await source.call("get_item", {"item_id": "1"})
    here = wire_setup.api.prefix  # the path the client signs is the whole one
    assert signed == [here + "/v1/ping", here + "/v1/items/1"]
    assert [r.header("x-signed") for r in wire_setup.api.requests] == [
        [here + "/v1/ping"],
        [here + "/v1/items/1"],
    ]


@pytest.mark.anyio
async def test_a_stream_set_on_the_clients_class_after_the_source_is_built_sends_its_requests(
    wire_setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An instrumentation wraps the library's stream after the host built its sources: every
    # request goes through the client's stream as it is at the request, never a copy of it.
    module = httpx if wire_setup.kind == "httpx" else httpx2
    library, used = module.AsyncClient.stream, []

    def recorded(self: object, method: str, url: str, **options: object) -> object:
        used.append(urlsplit(url).path)
        return library(self, method, url, **options)

    async with module.AsyncClient(verify=SSL_CONTEXT) as client:
        source = at.http.make(
            name="shop", base_url=wire_setup.base_url + "/v1", operations=OPERATIONS, client=client
        )
        await source.call("ping", {})
        monkeypatch.setattr(module.AsyncClient, "stream", recorded)
        await source.call("get_item", {"item_id": "1"})
    assert used == [wire_setup.api.prefix + "/v1/items/1"]


# --- end to end: an OpenAPI document through the toolkit -------------------------------------

PETSTORE = Path(__file__).parents[1] / "data" / "openapi-corpus" / "petstore-3.0.yaml"


@pytest.fixture(params=["httpx", "httpx2"])
def wire_setup(request: pytest.FixtureRequest, wire: tuple[Api, str]) -> Setup:
    api, url = wire
    api.reset()
    return Setup(api=api, base_url=url + api.prefix, transport="wire", kind=request.param)


@pytest.mark.anyio
async def test_an_openapi_document_goes_end_to_end_through_the_toolkit(wire_setup: Setup) -> None:
    api = wire_setup.api
    read = at.openapi.read_operations(at.openapi.read_document(PETSTORE))
    assert read.servers == ("http://petstore.swagger.io/v1",)
    # The catalog a host stores, and reads back, holds the operations.
    operations = at.catalog.load(list[at.http.Operation], at.catalog.dump(list(read.operations)))
    async with (
        wire_setup.client(headers={"Authorization": "Bearer host"}) as client,
        at.Runtime() as runtime,
    ):
        petstore = await runtime.spawn(
            at.http.make(
                name="petstore",
                base_url=wire_setup.base_url + "/v1",
                operations=operations,
                client=client,
            )
        )
        definitions = await petstore.discover()
        toolkit = at.assemble(
            [at.Member(petstore, definitions)],
            lambda _source, d: "allow" if d.annotations.read_only else "approve",
        )
        assert list(toolkit.tools) == [
            "petstore__listPets",
            "petstore__createPets",
            "petstore__showPetById",
        ]
        assert toolkit.tools["petstore__createPets"].needs_approval is True

        api.reply = Reply(body=b'{"id": 7, "name": "rex"}')
        answer = await toolkit.call("petstore__showPetById", {"petId": "7:é"})
        assert answer == {"id": 7, "name": "rex"}
        api.reply = Reply(body=b"[]")
        assert await toolkit.call("petstore__listPets", {"limit": 5}) == []
        api.reply = Reply(status=201, headers=[], body=b"")
        pet: at.JsonObject = {"id": 1, "name": "Rex", "tag": "dog"}
        assert await toolkit.call("petstore__createPets", {"body": pet}, approved=True) is None
        api.reply = Reply(status=404, body=b'{"code": 404, "message": "no such pet"}')
        failure = at.Failure.from_json(await toolkit.call("petstore__showPetById", {"petId": "8"}))
        refused = at.Failure.from_json(await toolkit.call("petstore__listPets", {"limit": "x"}))

    show, listing, create, missing = api.requests
    assert (show.method, show.raw_path, show.raw_query) == ("GET", "/v1/pets/7%3A%C3%A9", "")
    assert show.header("authorization") == ["Bearer host"]
    assert (listing.method, listing.raw_path, listing.raw_query) == ("GET", "/v1/pets", "limit=5")
    assert (create.method, create.raw_path) == ("POST", "/v1/pets")
    assert create.header("content-type") == ["application/json"]
    assert json.loads(create.body) == pet
    assert missing.raw_path == "/v1/pets/8"
    assert failure is not None
    assert failure.code == "CallFailedError"
    assert (
        failure.message == 'The API answered 404 Not Found: {"code": 404, "message": "no such pet"}'
    )
    # An input the schema refuses never reaches the API.
    assert refused is not None
    assert refused.code == "InvalidInputError"


@pytest.mark.anyio
async def test_an_openapi_30_nullable_input_is_accepted_and_left_out(wire_setup: Setup) -> None:
    document: at.JsonObject = {
        "openapi": "3.0.3",
        "paths": {
            "/search": {
                "get": {
                    "operationId": "search",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "since",
                            "in": "query",
                            "schema": {"type": "string", "nullable": True},
                        },
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    ],
                }
            }
        },
    }
    read = at.openapi.read_operations(document)
    async with wire_setup.client() as client:
        source = at.http.make(
            name="api", base_url=wire_setup.base_url, operations=read.operations, client=client
        )
        toolkit = at.assemble([at.Member(source, await source.discover())], lambda _s, _d: "allow")
        assert await toolkit.call("api__search", {"q": "a b", "since": None, "X-Trace": "t"}) == {
            "ok": True
        }
        refused = at.Failure.from_json(
            await toolkit.call("api__search", {"q": "a", "X-Trace": "a\nb"})
        )
    (request,) = wire_setup.api.requests
    assert (request.raw_path, request.raw_query) == ("/search", "q=a+b")
    assert request.header("x-trace") == ["t"]
    assert refused is not None
    assert refused.code == "InvalidInputError"
