"""Media in an answer: MCP content blocks read as texts and media, anything else left as JSON."""

from __future__ import annotations

import base64
import json

import pytest

from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._content import Media, Text, content_parts, holds_media, media_block

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-pixels-").decode()


def test_blocks_are_read_as_texts_and_media() -> None:
    link: JsonObject = {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}
    text_resource: JsonObject = {
        "type": "resource",
        "resource": {"uri": "test://t", "text": "hello"},
    }
    parts = content_parts(
        [
            {"type": "text", "text": "look", "annotations": {"priority": 1}},
            {"type": "image", "data": PNG, "mimeType": "Image/PNG"},
            {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://r/x.pdf", "blob": PNG,
                                              "mimeType": "application/pdf"}},
            {"type": "resource", "resource": {"uri": "test://r/raw", "blob": PNG}},
            text_resource,
            link,
        ]
    )  # fmt: skip
    assert parts == [
        Text(text="look"),
        Media(kind="image", mime_type="image/png", data=PNG),
        Media(kind="audio", mime_type="audio/wav", data=PNG),
        Media(kind="file", mime_type="application/pdf", data=PNG, uri="test://r/x.pdf"),
        Media(kind="file", mime_type="application/octet-stream", data=PNG, uri="test://r/raw"),
        Text(text=json.dumps(text_resource)),
        Text(text=json.dumps(link)),
    ]
    pdf = parts[3]
    assert isinstance(pdf, Media)
    assert pdf.filename == "x.pdf"
    assert pdf.size == len(base64.b64decode(PNG)) == len(pdf.decoded())
    assert pdf.data_url() == f"data:application/pdf;base64,{PNG}"


@pytest.mark.parametrize(
    "value",
    [
        [],
        {"type": "text", "text": "a"},
        "text",
        [{"type": "text", "text": "a"}, {"id": 1}],
        [{"type": "video", "data": PNG}],
        [{"type": "text", "text": 3}],
        [{"type": "image", "data": PNG}],
        [{"type": "resource", "resource": {"text": "no uri"}}],
        [{"type": "resource", "resource": {"uri": "u"}}],
        [{"type": "resource_link", "name": "no uri"}],
        [["nested"]],
    ],
)
def test_anything_else_is_plain_json(value: JsonValue) -> None:
    assert content_parts(value) is None


def test_data_that_is_no_base64_is_a_line_of_text_never_the_data() -> None:
    parts = content_parts([{"type": "image", "data": "not base64!", "mimeType": "image/png"}])
    assert parts == [Text(text="[image image/png: its data is not base64]")]


def test_a_medium_an_api_cannot_carry_is_named_with_its_size() -> None:
    medium = Media(kind="audio", mime_type="audio/ogg", data=PNG, uri="test://a/song.ogg")
    assert medium.placeholder("no audio here") == Text(
        text=f"[audio audio/ogg (test://a/song.ogg), {medium.size} bytes: no audio here]"
    )
    assert Media(kind="image", mime_type="image/png", data="").filename == "image.png"


def test_only_images_sounds_and_resources_are_media() -> None:
    assert holds_media([{"type": "text", "text": "a"}, {"type": "image"}])
    assert holds_media([{"type": "resource"}])
    assert not holds_media([{"type": "text", "text": "a"}, {"type": "resource_link"}])
    assert not holds_media({"type": "image"})


def test_a_binary_answer_is_the_block_of_its_kind() -> None:
    assert media_block(b"\x89PNG", "image/png", uri="x") == {
        "type": "image",
        "data": base64.b64encode(b"\x89PNG").decode(),
        "mimeType": "image/png",
    }
    assert media_block(b"ID3", "audio/mpeg", uri="x")["type"] == "audio"
    pdf = media_block(b"%PDF", "application/pdf", uri="answer:report")
    assert pdf == {
        "type": "resource",
        "resource": {
            "uri": "answer:report",
            "mimeType": "application/pdf",
            "blob": base64.b64encode(b"%PDF").decode(),
        },
    }
    blob = base64.b64encode(b"%PDF").decode()
    assert content_parts([pdf]) == [
        Media(kind="file", mime_type="application/pdf", data=blob, uri="answer:report")
    ]
