"""Operations as data: templates checked when made, and their catalog JSON."""

from __future__ import annotations

import pytest

import amends_toolkit as at
from amends_toolkit.http import Encoding, Operation, Param, RequestTemplate

DEFINITION = at.ToolDefinition(
    name="get_item",
    description="Get an item.",
    input_schema={"type": "object", "properties": {"item_id": {"type": "string"}}},
    annotations=at.Annotations(read_only=True),
)
OPERATION = Operation(
    definition=DEFINITION,
    request=RequestTemplate(
        method="GET", path="/items/{id}", params={"item_id": Param(location="path", name="id")}
    ),
)


def test_an_operation_is_catalog_json_in_the_documented_shape() -> None:
    assert at.catalog.dump(OPERATION) == {
        "definition": {
            "name": "get_item",
            "description": "Get an item.",
            "inputSchema": {"type": "object", "properties": {"item_id": {"type": "string"}}},
            "annotations": {"readOnly": True},
        },
        "request": {
            "method": "GET",
            "path": "/items/{id}",
            "params": {"item_id": {"in": "path", "name": "id"}},
            "body": None,
        },
    }
    assert at.catalog.load(Operation, at.catalog.dump(OPERATION)) == OPERATION
    assert at.catalog.load(list[Operation], at.catalog.dump([OPERATION])) == [OPERATION]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["request"].update(extra=1), "extra"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d["request"]["params"]["item_id"].update(location="path"), "location"),
        (lambda d: d["request"]["params"]["item_id"].update({"in": "cookie"}), "cookie"),
        (lambda d: d["request"]["params"]["item_id"].update({"in": "query"}), "request"),
        (lambda d: d["request"].update(method=1), "method"),
        (lambda d: d["request"].update(path="items"), "request"),
        (lambda d: d["request"].pop("params"), "request"),
    ],
)
def test_catalog_json_that_is_wrong_is_refused(change: object, message: str) -> None:
    data = at.catalog.dump(OPERATION)
    change(data)  # type: ignore[operator]
    with pytest.raises(at.CatalogError, match=message):
        at.catalog.load(Operation, data)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"method": "get", "path": "/"}, "upper-case"),
        ({"method": "GET", "path": "items"}, "start with '/'"),
        ({"method": "GET", "path": "/a?b=1"}, "no query"),
        ({"method": "GET", "path": "/a#b"}, "fragment"),
        ({"method": "GET", "path": "/a b"}, "space"),
        ({"method": "GET", "path": "/a\r\nb"}, "control"),
        ({"method": "GET", "path": "/{id}"}, "placeholders"),
        (
            {"method": "GET", "path": "/", "params": {"id": Param(location="path", name="id")}},
            "placeholders",
        ),
        (
            {
                "method": "GET",
                "path": "/{id}/{id}",
                "params": {"id": Param(location="path", name="id")},
            },
            "twice",
        ),
        (
            {
                "method": "GET",
                "path": "/",
                "params": {
                    "a": Param(location="header", name="X-A"),
                    "b": Param(location="header", name="x-a"),
                },
            },
            "one header",
        ),
        (
            {
                "method": "POST",
                "path": "/",
                "params": {"q": Param(location="query", name="q")},
                "body": "q",
            },
            "both the body and a parameter",
        ),
        ({"method": "POST", "path": "/", "body": ""}, "body names"),
    ],
)
def test_a_template_that_cannot_be_sent_is_refused_when_made(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RequestTemplate(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("location", "name", "message"),
    [
        ("cookie", "sid", "path, query or header"),
        ("header", "X Bad", "header name"),
        ("header", "X-A\r\n", "header name"),
        ("path", "{id}", "braces"),
        ("query", "", "non-empty"),
    ],
)
def test_a_param_that_cannot_be_sent_is_refused(location: str, name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Param(location=location, name=name)  # type: ignore[arg-type]


def test_the_public_surface_of_at_http_is_pinned() -> None:
    assert at.http.__all__ == (
        "MAX_CONNECTIONS",
        "MAX_PER_TENANT",
        "AsyncClient",
        "Connections",
        "Encoding",
        "HttpSource",
        "Location",
        "Operation",
        "Param",
        "RequestTemplate",
        "Style",
        "make",
    )
    assert "http" in at.__all__


def test_an_operation_of_plain_data_is_refused_with_the_fix() -> None:
    definition = at.ToolDefinition(name="get", description="", input_schema={"type": "object"})
    request = at.http.RequestTemplate(method="GET", path="/items")
    with pytest.raises(ValueError, match=r"^definition must be an at\.ToolDefinition, not dict; "):
        at.http.Operation(definition={"name": "get"}, request=request)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^request must be") as caught:
        at.http.Operation(definition=definition, request={"method": "GET", "path": "/items"})  # type: ignore[arg-type]
    assert str(caught.value) == (
        "request must be an at.http.RequestTemplate, not dict; "
        "read stored catalog JSON with at.catalog.load(at.http.Operation, data)"
    )


FORM_OPERATION = Operation(
    definition=DEFINITION,
    request=RequestTemplate(
        method="POST",
        path="/items/{id}",
        params={
            "item_id": Param(location="path", name="id", style="label", explode=True),
            "fields": Param(location="query", name="fields", explode=False),
        },
        body="body",
        media_type="multipart/form-data",
        encoding={"file": Encoding(file=True, content_type="image/png"), "meta": Encoding()},
        query={"beta": "true"},
    ),
)


def test_styles_and_body_encodings_are_catalog_json_and_defaults_are_left_out() -> None:
    data = at.catalog.dump(FORM_OPERATION)
    assert isinstance(data, dict)
    assert data["request"] == {
        "method": "POST",
        "path": "/items/{id}",
        "params": {
            "item_id": {"in": "path", "name": "id", "style": "label", "explode": True},
            "fields": {"in": "query", "name": "fields", "explode": False},
        },
        "body": "body",
        "mediaType": "multipart/form-data",
        "encoding": {"file": {"contentType": "image/png", "file": True}, "meta": {}},
        "query": {"beta": "true"},
    }
    assert at.catalog.load(Operation, data) == FORM_OPERATION


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["params"]["fields"].update(style="matrix"), "matrix"),
        (lambda r: r["params"]["fields"].update(explode="no"), "explode"),
        (lambda r: r.update(mediaType="not a type"), "media type"),
        (lambda r: r["encoding"]["meta"].update(style="deepObject"), "style"),
        (lambda r: r["encoding"]["meta"].update(filename="x"), "filename"),
    ],
)
def test_catalog_json_of_a_style_or_encoding_that_is_wrong_is_refused(
    change: object, message: str
) -> None:
    data = at.catalog.dump(FORM_OPERATION)
    assert isinstance(data, dict)
    change(data["request"])  # type: ignore[operator]
    with pytest.raises(at.CatalogError, match=message):
        at.catalog.load(Operation, data)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"location": "query", "style": "matrix"}, "not one of form"),
        ({"location": "path", "style": "form"}, "not one of simple, label, matrix"),
        ({"location": "header", "style": "label"}, "not one of simple"),
        ({"location": "query", "style": "pipeDelimited", "explode": True}, "not defined"),
        ({"location": "query", "style": "deepObject", "explode": False}, "only with explode=true"),
        ({"location": "query", "explode": "yes"}, "true or false"),
    ],
)
def test_a_style_its_place_cannot_have_is_refused(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Param(name="p", **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"media_type": "application/x-www-form-urlencoded"}, "needs a body"),
        ({"body": "b", "media_type": "text/plain; charset=utf-8"}, "media type"),
        ({"body": "b", "encoding": {"f": Encoding()}}, "only a"),
        (
            {
                "body": "b",
                "media_type": "application/x-www-form-urlencoded",
                "encoding": {"f": Encoding(file=True)},
            },
            "no file",
        ),
        (
            {
                "body": "b",
                "media_type": "multipart/form-data",
                "encoding": {"f": Encoding(style="form")},
            },
            "no style",
        ),
        ({"query": {"": "x"}}, "non-empty name"),
        ({"query": {"q": "x"}, "params": {"q": Param(location="query", name="q")}}, "both sent"),
        (
            {"body": "b", "media_type": "multipart/form-data", "encoding": {"f": "file"}},
            "at.http.Encoding",
        ),
        (
            {"body": "b", "media_type": "multipart/form-data", "encoding": {"": Encoding()}},
            "non-empty field",
        ),
    ],
)
def test_a_body_encoding_that_cannot_be_sent_is_refused_when_made(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RequestTemplate(method="POST", path="/", **arguments)  # type: ignore[arg-type]


def test_an_encoding_content_type_must_be_a_media_type() -> None:
    with pytest.raises(ValueError, match="media type"):
        Encoding(content_type="image/png\r\nX: 1")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"style": "deepObject", "explode": False}, "only with explode=true"),
        ({"style": "matrix"}, "not one of"),
        ({"file": "yes"}, "file must be true or false"),
    ],
)
def test_an_encoding_that_cannot_be_written_is_refused(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Encoding(**arguments)  # type: ignore[arg-type]
