"""Writing a request body in its media type: JSON, a form, multipart form data, or a file's bytes.

- JSON (``application/json`` or a ``+json`` type): the body property's value as JSON.
- A form (``application/x-www-form-urlencoded``): the body is an object, each field written as a
  query parameter in its encoding's style (by default ``form``, exploded), then form-encoded.
- Multipart form data (``multipart/form-data``, RFC 7578): the body is an object, each field a
  part named by the field: a string, number or boolean as text, an object as JSON, a list as a
  part for each item, and a ``file`` field as a file. Parts that are not files come first, so
  that metadata precedes content, as APIs that stream uploads require.
- Any other media type: the body is one file, sent as its bytes.

A file is an object the model gives: its content as ``text`` (sent as UTF-8) or ``base64``, and
optionally its ``filename`` and ``contentType``. A part's name and a file's name are escaped as
the HTML standard does (``"``, CR and LF percent-encoded), so no value frames a part; a content
type must be a plain media type. A body longer than the size limit is refused, and base64 text
is measured before it is decoded.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from amends_toolkit.protocols.http._response import is_json
from amends_toolkit.protocols.http._styles import InputRefused, query_pairs, scalar
from amends_toolkit.protocols.http._template import FORM, MULTIPART, Encoding, is_media_type

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.protocols.http._template import RequestTemplate

__all__ = ("encode_body", "file_schema")

_FILE_KEYS = frozenset({"text", "base64", "filename", "contentType"})
_ESCAPES = str.maketrans({'"': "%22", "\r": "%0D", "\n": "%0A"})
_OCTETS = "application/octet-stream"


def file_schema(description: str | None = None, *, named: bool = True) -> JsonObject:
    """The JSON Schema of a file the model gives: ``text`` or ``base64``, and for a part of
    multipart form data (``named``) its ``filename``; ``contentType`` when the API fixes none."""
    properties: JsonObject = {
        "text": {"type": "string", "description": "The content, when it is text (sent as UTF-8)."},
        "base64": {
            "type": "string",
            "contentEncoding": "base64",
            "description": "The content in base64, when it is binary.",
        },
    }
    if named:
        properties["filename"] = {"type": "string", "description": "The file's name."}
    properties["contentType"] = {
        "type": "string",
        "description": "The content's media type (such as image/png), when the API names none.",
    }
    schema: JsonObject = {
        "type": "object",
        "description": description or "A file: its content as text or in base64.",
        "properties": properties,
        "oneOf": [{"required": ["text"]}, {"required": ["base64"]}],
        "additionalProperties": False,
    }
    return schema


def encode_body(template: RequestTemplate, value: JsonValue, *, max_size: int) -> tuple[bytes, str]:
    """The bytes of the body ``value`` is, and the ``Content-Type`` they are sent with.

    Raises:
        InputRefused: the value cannot be sent in the body's media type, or the body would be
            longer than ``max_size`` bytes.
    """
    prop = template.body or "body"
    media = template.media_type
    if media is None or is_json(media):
        content, content_type = _json(prop, value), media or "application/json"
    elif media == FORM:
        pairs: list[tuple[str, str]] = []
        for field, item in _fields(prop, value):
            encoding = template.encoding.get(field, Encoding())
            pairs += query_pairs(f"{prop}.{field}", field, item, encoding.style, encoding.explode)
        content, content_type = urlencode(pairs).encode(), FORM
    elif media == MULTIPART:
        content, content_type = _multipart(template, prop, value, max_size)
    else:
        content, _, given = _file(prop, value, max_size)
        content_type = _concrete(media) or given or _OCTETS
    if len(content) > max_size:
        raise _too_long(prop, max_size)
    return content, content_type


def _too_long(prop: str, max_size: int) -> InputRefused:
    return InputRefused(f"'{prop}' makes a body longer than the {max_size} bytes allowed.")


def _json(prop: str, value: JsonValue) -> bytes:
    try:
        return json.dumps(
            value, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode()
    except ValueError:
        raise InputRefused(f"'{prop}' must be JSON (no NaN or Infinity).") from None


def _fields(prop: str, value: JsonValue) -> list[tuple[str, JsonValue]]:
    if not isinstance(value, dict):
        raise InputRefused(f"'{prop}' must be an object, a field for each key.")
    return [(field, item) for field, item in value.items() if item is not None]


def _file(prop: str, value: JsonValue, max_size: int) -> tuple[bytes, str | None, str | None]:
    """A file's bytes, its name and its content type."""
    if not isinstance(value, dict) or not set(value) <= _FILE_KEYS:
        raise InputRefused(
            f"'{prop}' is a file: an object with its content as 'text' or 'base64', and "
            "optionally 'filename' and 'contentType'."
        )
    text, encoded = value.get("text"), value.get("base64")
    if (text is None) == (encoded is None):
        raise InputRefused(f"'{prop}' is a file: give its content as one of 'text' or 'base64'.")
    if isinstance(text, str):
        content = text.encode()
    elif isinstance(encoded, str):
        compact = "".join(encoded.split())
        # Four characters of base64 are three bytes: refuse before decoding what cannot fit.
        if len(compact) // 4 * 3 > max_size + 2:
            raise _too_long(prop, max_size)
        try:
            content = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            raise InputRefused(f"'{prop}.base64' is not base64.") from None
    else:
        raise InputRefused(f"'{prop}' is a file whose 'text' or 'base64' must be a string.")
    filename, content_type = value.get("filename"), value.get("contentType")
    if filename is not None and not isinstance(filename, str):
        raise InputRefused(f"'{prop}.filename' must be a string.")
    if content_type is not None and not is_media_type(content_type):
        raise InputRefused(f"'{prop}.contentType' must be a media type such as image/png.")
    return content, filename, content_type


def _multipart(
    template: RequestTemplate, prop: str, value: JsonValue, max_size: int
) -> tuple[bytes, str]:
    fields = [
        (field, item, template.encoding.get(field, Encoding()))
        for field, item in _fields(prop, value)
    ]
    parts: list[tuple[str, bytes]] = []
    size = 0
    # Fields before files (a stable sort keeps the order given within each).
    for field, item, encoding in sorted(fields, key=lambda field: field[2].file):
        for one in item if isinstance(item, list) else [item]:
            where = f"{prop}.{field}"
            disposition = f'form-data; name="{field.translate(_ESCAPES)}"'
            if encoding.file:
                content, filename, given = _file(where, one, max_size)
                disposition += f'; filename="{(filename or field).translate(_ESCAPES)}"'
                content_type = _concrete(encoding.content_type) or given or _OCTETS
            elif isinstance(one, dict):
                content = _json(where, one)
                content_type = encoding.content_type or "application/json"
            else:
                content = scalar(where, one).encode()
                content_type = encoding.content_type or ""
            size += len(content)
            if size > max_size:
                raise _too_long(prop, max_size)
            head = f"Content-Disposition: {disposition}\r\n"
            if content_type:
                head += f"Content-Type: {content_type}\r\n"
            parts.append((head, content))
    boundary = "amends-" + secrets.token_hex(16)
    while any(boundary.encode() in content for _, content in parts):
        boundary = "amends-" + secrets.token_hex(16)
    body = b"".join(
        b"--" + boundary.encode() + b"\r\n" + head.encode() + b"\r\n" + content + b"\r\n"
        for head, content in parts
    )
    return body + b"--" + boundary.encode() + b"--\r\n", f"{MULTIPART}; boundary={boundary}"


def _concrete(content_type: str | None) -> str | None:
    return content_type if is_media_type(content_type) else None
