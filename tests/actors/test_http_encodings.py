"""Parameter styles and form, multipart and file bodies, sent by the HTTP source over the wire to
a Starlette app under uvicorn on 127.0.0.1 that reads them with its own parsers (Starlette's
query parser and form parser, python-multipart), and operations read from the corpus's real
documents sent the same way."""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.http import Encoding, Operation, Param, RequestTemplate

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).parents[1] / "data" / "openapi-corpus"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


async def echo(request: Request) -> JSONResponse:
    """What the request was, as Starlette and python-multipart read it."""
    answer: dict[str, JsonValue] = {
        "path": request.scope["raw_path"].decode("ascii"),
        "query": [[k, v] for k, v in request.query_params.multi_items()],
        "headers": {k: v for k, v in request.headers.items() if k.startswith("x-")},
        "contentType": request.headers.get("content-type"),
    }
    media = (request.headers.get("content-type") or "").split(";")[0]
    if media in (FORM, MULTIPART):
        async with request.form() as form:
            fields: list[JsonValue] = []
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    fields.append(
                        [
                            key,
                            {
                                "filename": value.filename,
                                "contentType": value.content_type,
                                "base64": base64.b64encode(await value.read()).decode(),
                            },
                        ]
                    )
                else:
                    fields.append([key, value])
        answer["form"] = fields
    else:
        answer["base64"] = base64.b64encode(await request.body()).decode()
    return JSONResponse(answer)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    app = Starlette(routes=[Route("/{path:path}", echo, methods=["GET", "POST", "PUT"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


def operation(request: RequestTemplate) -> Operation:
    definition = at.ToolDefinition(name="op", description="An operation.", input_schema={})
    return Operation(definition=definition, request=request)


@asynccontextmanager
async def source(
    base_url: str, *operations: Operation, **options: Any
) -> AsyncIterator[at.http.HttpSource]:
    async with httpx.AsyncClient() as client:
        yield at.http.make(
            name="api", base_url=base_url, operations=operations, client=client, **options
        )


async def send(
    base_url: str, request: RequestTemplate, input: JsonObject, **options: int
) -> JsonObject:
    async with source(base_url, operation(request), **options) as api:
        answer = await api.call("op", input)
    assert isinstance(answer, dict)
    return answer


QUERY = RequestTemplate(
    method="GET",
    path="/q",
    params={
        "form": Param(location="query", name="form", explode=False),
        "space": Param(location="query", name="space", style="spaceDelimited"),
        "pipe": Param(location="query", name="pipe", style="pipeDelimited"),
        "deep": Param(location="query", name="deep", style="deepObject", explode=True),
        "spread": Param(location="query", name="spread"),
        "flat": Param(location="query", name="flat", explode=False),
        "many": Param(location="query", name="many"),
    },
)


async def test_query_styles_arrive_as_openapi_writes_them(base_url: str) -> None:
    answer = await send(
        base_url,
        QUERY,
        {
            "form": ["a", "b c", 1],
            "space": ["x", "y"],
            "pipe": ["p", "q&r"],
            "deep": {"R": 100, "G": "2 0", "skip": None},
            "spread": {"gt": 1, "lt": 5},
            "flat": {"k": "v", "n": True},
            "many": ["m", "n"],
        },
    )
    assert answer["query"] == [
        ["form", "a,b c,1"],
        ["space", "x y"],
        ["pipe", "p|q&r"],
        ["deep[R]", "100"],
        ["deep[G]", "2 0"],
        ["gt", "1"],
        ["lt", "5"],
        ["flat", "k,v,n,true"],
        ["many", "m"],
        ["many", "n"],
    ]


@pytest.mark.parametrize(
    ("input", "why"),
    [
        ({"form": ["a,b"]}, "joined by ','"),
        ({"space": ["a b"]}, "joined by a space"),
        ({"pipe": ["a|b"]}, "joined by '|'"),
        ({"deep": {"a]": 1}}, "joined by '\\['|joined by '\\]'"),
        ({"deep": "text"}, "must be an object"),
        ({"flat": {"k,": 1}}, "joined by ','"),
        ({"deep": {"a": {"b": 1}}}, "values must be strings"),
        ({"spread": {"gt": 1, "many": "x"}}, "may not hold the key 'many'"),
    ],
)
async def test_a_value_holding_its_delimiter_is_refused_and_nothing_is_sent(
    base_url: str, input: JsonObject, why: str
) -> None:
    async with source(base_url, operation(QUERY)) as api:
        with pytest.raises(at.InvalidInputError, match=why):
            await api.call("op", input)


async def test_an_exploded_objects_key_never_passes_for_the_clients_own_parameter(
    base_url: str,
) -> None:
    # An exploded object's keys name query pairs: the model may choose them, but the client's
    # own parameters (its credentials) are its alone.
    async with httpx.AsyncClient(params={"api_key": "secret"}) as client:
        api = at.http.make(
            name="api", base_url=base_url, operations=[operation(QUERY)], client=client
        )
        answer = await api.call("op", {"spread": {"api_key": "model's", "gt": 1}})
    assert isinstance(answer, dict)
    # The server got the client's value, which the model reads redacted (the model's would show).
    assert answer["query"] == [["api_key", "[redacted]"], ["gt", "1"]]


async def test_path_and_header_styles_arrive_as_openapi_writes_them(base_url: str) -> None:
    template = RequestTemplate(
        method="GET",
        path="/p/{s}/{l}/{m}/{o}",
        params={
            "s": Param(location="path", name="s"),
            "l": Param(location="path", name="l", style="label", explode=True),
            "m": Param(location="path", name="m", style="matrix"),
            "o": Param(location="path", name="o", explode=True),
            "h": Param(location="header", name="X-Obj"),
            "e": Param(location="header", name="X-Exploded", explode=True),
        },
    )
    answer = await send(
        base_url,
        template,
        {
            "s": ["a", "b:c"],
            "l": ["x", "y"],
            "m": ["1", "2"],
            "o": {"R": 1, "G": 2},
            "h": {"a": 1, "b": "c"},
            "e": {"a": 1},
        },
    )
    assert answer["path"] == "/p/a,b%3Ac/.x.y/;m=1,2/R=1,G=2"
    assert answer["headers"] == {"x-obj": "a,1,b,c", "x-exploded": "a=1"}


@pytest.mark.parametrize(
    ("input", "why"),
    [
        ({"h": {"a": "1,b"}}, "joined by ','"),
        ({"e": {"a": "1,b=2"}}, "joined by ','"),
        ({"e": {"a=b": 1}}, "joined by '='"),
    ],
)
async def test_a_header_value_holding_its_delimiter_is_refused(
    base_url: str, input: JsonObject, why: str
) -> None:
    # X-Exploded {"a": "1,b=2"} would arrive as a=1,b=2: a pair the model made, not a value.
    template = RequestTemplate(
        method="GET",
        path="/h",
        params={
            "h": Param(location="header", name="X-Obj"),
            "e": Param(location="header", name="X-Exploded", explode=True),
        },
    )
    async with source(base_url, operation(template)) as api:
        with pytest.raises(at.InvalidInputError, match=why):
            await api.call("op", input)


async def test_a_form_body_is_read_by_starlettes_form_parser(base_url: str) -> None:
    template = RequestTemplate(
        method="POST",
        path="/form",
        body="body",
        media_type=FORM,
        encoding={"tags": Encoding(explode=False), "meta": Encoding(style="deepObject")},
    )
    answer = await send(
        base_url,
        template,
        {
            "body": {
                "To": "+15551234567",
                "Body": "héllo & bye=1",
                "MediaUrl": ["https://a/1", "https://a/2"],
                "tags": ["x", "y"],
                "meta": {"k": "v"},
                "Skip": None,
                "Flag": False,
            }
        },
    )
    assert answer["contentType"] == FORM
    assert answer["form"] == [
        ["To", "+15551234567"],
        ["Body", "héllo & bye=1"],
        ["MediaUrl", "https://a/1"],
        ["MediaUrl", "https://a/2"],
        ["tags", "x,y"],
        ["meta[k]", "v"],
        ["Flag", "false"],
    ]


MULTIPART_TEMPLATE = RequestTemplate(
    method="POST",
    path="/upload",
    body="body",
    media_type=MULTIPART,
    encoding={
        "file": Encoding(file=True),
        "images": Encoding(file=True, content_type="image/png"),
        "sdp": Encoding(content_type="application/sdp"),
    },
)


async def test_multipart_form_data_is_read_by_python_multipart(base_url: str) -> None:
    png = bytes(range(256)) + b"\r\n--not-a-boundary\r\n"
    answer = await send(
        base_url,
        MULTIPART_TEMPLATE,
        {
            "body": {
                "file": {
                    "text": "WEBVTT\nhé",
                    "filename": 'a"b\r\n.vtt',
                    "contentType": "text/vtt",
                },
                "images": [{"base64": base64.b64encode(png).decode()}, {"text": "x"}],
                "purpose": "assistants",
                "attributes": {"name": "photo.png", "parent": {"id": "0"}},
                "n": 2,
                "languages": ["en", "fr"],
                "sdp": "v=0",
            }
        },
    )
    assert str(answer["contentType"]).startswith("multipart/form-data; boundary=")
    form = answer["form"]
    assert isinstance(form, list)
    # Fields before files, in the order given.
    assert form[:6] == [
        ["purpose", "assistants"],
        ["attributes", '{"name":"photo.png","parent":{"id":"0"}}'],
        ["n", "2"],
        ["languages", "en"],
        ["languages", "fr"],
        ["sdp", "v=0"],
    ]
    assert form[6:] == [
        [
            "file",
            {
                "filename": "a%22b%0D%0A.vtt",
                "contentType": "text/vtt",
                "base64": base64.b64encode("WEBVTT\nhé".encode()).decode(),
            },
        ],
        [
            "images",
            {
                "filename": "images",
                "contentType": "image/png",
                "base64": base64.b64encode(png).decode(),
            },
        ],
        ["images", {"filename": "images", "contentType": "image/png", "base64": "eA=="}],
    ]


@pytest.mark.parametrize(
    ("file", "why"),
    [
        ({"text": "a", "base64": "YQ=="}, "one of 'text' or 'base64'"),
        ({}, "one of 'text' or 'base64'"),
        ({"base64": "not base64!"}, "is not base64"),
        ({"text": "a", "contentType": "text/plain\r\nX-Evil: 1"}, "must be a media type"),
        ({"text": "a", "path": "/etc/passwd"}, "optionally 'filename'"),
        ("just text", "is a file"),
        ({"base64": base64.b64encode(b"x" * 101).decode()}, "longer than the 100 bytes allowed"),
        ({"base64": "A" * 1000}, "'body.file' makes a body longer than the 100 bytes"),
        ({"text": 5}, "'body.file' is a file whose 'text' or 'base64' must be a string"),
        ({"text": "a", "filename": 5}, "'body.file.filename' must be a string"),
    ],
)
async def test_a_file_that_cannot_be_sent_is_refused_before_anything_is_sent(
    base_url: str, file: JsonValue, why: str
) -> None:
    async with source(base_url, operation(MULTIPART_TEMPLATE), max_body_size=100) as api:
        with pytest.raises(at.InvalidInputError, match=why):
            await api.call("op", {"body": {"file": file}})


@pytest.mark.parametrize(
    ("media_type", "body", "why"),
    [
        (None, {"text": "x" * 100}, "'body' makes a body longer than the 100 bytes allowed"),
        (FORM, {"text": "x" * 100}, "'body' makes a body longer than the 100 bytes allowed"),
        (FORM, "text=x", "'body' must be an object, a field for each key"),
        (MULTIPART, ["x"], "'body' must be an object, a field for each key"),
    ],
)
async def test_a_body_that_cannot_be_sent_is_refused(
    base_url: str, media_type: str | None, body: JsonValue, why: str
) -> None:
    template = RequestTemplate(method="POST", path="/b", body="body", media_type=media_type)
    async with source(base_url, operation(template), max_body_size=100) as api:
        with pytest.raises(at.InvalidInputError, match=re.escape(why)):
            await api.call("op", {"body": body})


async def test_a_file_body_is_sent_as_its_bytes(base_url: str) -> None:
    template = RequestTemplate(method="PUT", path="/raw", body="body", media_type="image/jpeg")
    jpeg = b"\xff\xd8\xff\xe0 jpeg"
    answer = await send(base_url, template, {"body": {"base64": base64.b64encode(jpeg).decode()}})
    assert (answer["contentType"], answer["base64"]) == (
        "image/jpeg",
        base64.b64encode(jpeg).decode(),
    )


def corpus_operation(document: str, name: str) -> Operation:
    read = at.openapi.read_operations(at.openapi.read_document(CORPUS / document))
    return next(op for op in read.operations if op.definition.name == name)


async def call_corpus(base_url: str, operation: Operation, input: JsonObject) -> JsonObject:
    # The toolkit checks the input against the tool's schema first, as for a model's call.
    async with source(base_url, operation) as api:
        toolkit = at.source_toolkit(api, [operation.definition])
        answer = await toolkit.call(operation.definition.name, input)
    assert isinstance(answer, dict), answer
    assert at.Failure.from_json(answer) is None, answer
    return answer


async def test_boxs_fields_list_not_exploded_arrives_comma_joined(base_url: str) -> None:
    op = corpus_operation("box-3.0.json", "get_files_id")
    answer = await call_corpus(base_url, op, {"file_id": "12345", "fields": ["name", "size"]})
    assert answer["path"] == "/files/12345"
    assert answer["query"] == [["fields", "name,size"]]


async def test_openais_deep_object_metadata_arrives_in_brackets(base_url: str) -> None:
    op = corpus_operation("openai-3.1.yaml", "listPaginatedFineTuningJobs")
    answer = await call_corpus(base_url, op, {"metadata": {"team": "a b"}, "limit": 2})
    query = answer["query"]
    assert isinstance(query, list)
    assert sorted(map(str, query)) == ["['limit', '2']", "['metadata[team]', 'a b']"]


async def test_openais_beta_path_sends_its_query_with_every_request(base_url: str) -> None:
    op = corpus_operation("openai-3.1.yaml", "beta_getResponse")
    answer = await call_corpus(base_url, op, {"response_id": "resp_1", "stream": False})
    assert answer["path"] == "/responses/resp_1"
    assert answer["query"] == [["beta", "true"], ["stream", "false"]]


async def test_twilios_form_body_arrives_as_a_form(base_url: str) -> None:
    op = corpus_operation("twilio-messaging-v1-3.0.yaml", "CreateTollfreeVerification")
    body: JsonObject = {
        "BusinessName": "Acme",
        "BusinessWebsite": "https://acme.example",
        "NotificationEmail": "a@acme.example",
        "UseCaseCategories": ["TWO_FACTOR_AUTHENTICATION", "MARKETING"],
        "UseCaseSummary": "OTP",
        "ProductionMessageSample": "Your code is 1",
        "OptInImageUrls": ["https://acme.example/optin.png"],
        "OptInType": "VERBAL",
        "MessageVolume": "10",
        "TollfreePhoneNumberSid": "PN" + "0" * 32,
    }
    answer = await call_corpus(base_url, op, {"body": body})
    assert answer["contentType"] == FORM
    assert ["UseCaseCategories", "MARKETING"] in answer["form"]  # type: ignore[operator]
    assert ["BusinessName", "Acme"] in answer["form"]  # type: ignore[operator]


async def test_openais_audio_transcription_uploads_the_file(base_url: str) -> None:
    op = corpus_operation("openai-3.1.yaml", "createTranscription")
    audio = base64.b64encode(b"RIFF....WAVEfmt ").decode()
    answer = await call_corpus(
        base_url,
        op,
        {"body": {"file": {"base64": audio, "filename": "a.wav"}, "model": "whisper-1"}},
    )
    assert answer["form"] == [
        ["model", "whisper-1"],
        ["file", {"filename": "a.wav", "contentType": "application/octet-stream", "base64": audio}],
    ]


async def test_a_file_the_schema_refuses_never_reaches_the_source(base_url: str) -> None:
    op = corpus_operation("openai-3.1.yaml", "createTranscription")
    async with source(base_url, op) as api:
        toolkit = at.source_toolkit(api, [op.definition])
        answer = await toolkit.call(
            op.definition.name,
            {"body": {"file": {"text": "a", "base64": "YQ=="}, "model": "whisper-1"}},
        )
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "InvalidInputError"
