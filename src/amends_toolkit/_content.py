"""Media in a tool's answer: MCP content blocks read as text and media for the model APIs.

A tool's answer is JSON. When it is a list of MCP content blocks (what an MCP tool answers
without structured content, and what an HTTP source answers for an image, audio or file body),
:func:`content_parts` reads it as parts: the text of ``text`` blocks, the media of ``image``,
``audio`` and binary ``resource`` blocks, and any other block (a text resource, a resource link)
as the JSON text of the block. Each adapter gives the parts to its model API in that API's form;
a medium an API cannot carry becomes a line of text saying so (:meth:`Media.placeholder`), never
its base64. Any other answer (a block that is no MCP block, a list with something else in it) is
plain JSON, read as it is.

The recognition is structural and linear; base64 data is checked (strict alphabet and padding)
so that no model API refuses a request over a peer's bad data: a medium whose data is not base64
is a placeholder. Its size is bounded where the answer's is (the transports and the HTTP
source's ``max_answer_length``).
"""

from __future__ import annotations

import binascii
import json
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

import attrs

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("Media", "Part", "Text", "content_parts", "holds_media", "media_block")

MediaKind: TypeAlias = Literal["image", "audio", "file"]

_BLOCK_TYPES: Final = frozenset({"text", "image", "audio", "resource", "resource_link"})
_MEDIA_TYPES: Final = frozenset({"image", "audio", "resource"})


@attrs.frozen(kw_only=True)
class Text:
    """Text the model reads."""

    text: str


@attrs.frozen(kw_only=True)
class Media:
    """An image, a sound or a file, as base64 data (checked) and its media type."""

    kind: MediaKind
    mime_type: str
    data: str = attrs.field(repr=False)
    uri: str | None = None

    @property
    def size(self) -> int:
        """Its size in bytes, decoded."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    @property
    def filename(self) -> str:
        """A name for it: the last segment of its URI, else its kind and subtype."""
        if self.uri:
            last = self.uri.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
            if last:
                return last
        return f"{self.kind}.{self.mime_type.rsplit('/', 1)[-1]}"

    def data_url(self) -> str:
        """A ``data:`` URL of it, as the OpenAI APIs take an image or a file."""
        return f"data:{self.mime_type};base64,{self.data}"

    def decoded(self) -> bytes:
        """Its bytes."""
        return binascii.a2b_base64(self.data)

    def placeholder(self, why: str) -> Text:
        """What the model reads in its place where its API cannot carry it."""
        named = f" ({self.uri})" if self.uri else ""
        return Text(text=f"[{self.kind} {self.mime_type}{named}, {self.size} bytes: {why}]")


Part: TypeAlias = Text | Media


def content_parts(value: JsonValue) -> list[Part] | None:
    """The parts of an answer that is a non-empty list of MCP content blocks, else ``None``."""
    if not isinstance(value, list) or not value:
        return None
    parts: list[Part] = []
    for block in value:
        part = _part(block)
        if part is None:
            return None
        parts.append(part)
    return parts


def holds_media(blocks: JsonValue) -> bool:
    """Whether a list of MCP content blocks holds an image, a sound or an embedded resource."""
    return isinstance(blocks, list) and any(
        isinstance(block, dict) and block.get("type") in _MEDIA_TYPES for block in blocks
    )


def media_block(data: bytes, mime_type: str, *, uri: str) -> JsonObject:
    """The MCP content block of a binary answer: an image, audio, or an embedded resource."""
    encoded = binascii.b2a_base64(data, newline=False).decode("ascii")
    kind = mime_type.split("/", 1)[0]
    if kind in ("image", "audio"):
        return {"type": kind, "data": encoded, "mimeType": mime_type}
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "blob": encoded}}


def _part(block: JsonValue) -> Part | None:
    if not isinstance(block, dict) or block.get("type") not in _BLOCK_TYPES:
        return None
    kind = block["type"]
    if kind == "text":
        text = block.get("text")
        return Text(text=text) if isinstance(text, str) else None
    if kind in ("image", "audio"):
        data, mime_type = block.get("data"), block.get("mimeType")
        if not isinstance(data, str) or not isinstance(mime_type, str):
            return None
        return _media("image" if kind == "image" else "audio", mime_type, data, None)
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict) or not isinstance(uri := resource.get("uri"), str):
            return None
        blob, mime_type = resource.get("blob"), resource.get("mimeType")
        if isinstance(blob, str):
            mime = mime_type if isinstance(mime_type, str) else "application/octet-stream"
            top = mime.split("/", 1)[0]
            return _media(
                "image" if top == "image" else "audio" if top == "audio" else "file",
                mime,
                blob,
                uri,
            )
        if not isinstance(resource.get("text"), str):
            return None
    elif not isinstance(block.get("uri"), str):  # resource_link
        return None
    return Text(text=json.dumps(block, ensure_ascii=False))


def _media(kind: MediaKind, mime_type: str, data: str, uri: str | None) -> Part:
    mime = mime_type.strip().lower()
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except binascii.Error:
        named = f" ({uri})" if uri else ""
        return Text(text=f"[{kind} {mime}{named}: its data is not base64]")
    return Media(kind=kind, mime_type=mime, data=data, uri=uri)
