"""Writing a value in the style of its place, as OpenAPI 3.1 says (4.8.12.4, Style Examples).

A value is a string, a number or a boolean (a *scalar*), a list of scalars, or an object whose
values are scalars; what OpenAPI leaves undefined (a list in a list, an object in an object) is
refused. A ``null`` in an object leaves its key out. With ``color`` = ``["blue", "black"]`` and
``point`` = ``{"x": 1, "y": 2}``:

==================  ========================  ===============================================
Style               explode=false             explode=true
==================  ========================  ===============================================
simple (path)       ``blue,black``            ``blue,black``; ``x=1,y=2``
label (path)        ``.blue,black``           ``.blue.black``; ``.x=1.y=2``
matrix (path)       ``;color=blue,black``     ``;color=blue;color=black``; ``;x=1;y=2``
form (query)        ``color=blue,black``      ``color=blue&color=black``; ``x=1&y=2``
spaceDelimited      ``color=blue black``      (not defined)
pipeDelimited       ``color=blue|black``      (not defined)
deepObject          (not defined)             ``point[x]=1&point[y]=2``
==================  ========================  ===============================================

An object not exploded is its keys and values in turn (``x,1,y,2``). A header is ``simple``, its
list joined by ``", "``. Since a receiver splits a joined value at its delimiter, an element that
holds its delimiter (a comma in ``form`` not exploded, ``=`` in an exploded key, a bracket in a
``deepObject`` key) is refused: the model gives values, never the places between them.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from amends_toolkit._json import JsonValue

__all__ = (
    "MAX_PATH_DECODINGS",
    "MAX_PATH_VALUE_LENGTH",
    "InputRefused",
    "header_text",
    "path_text",
    "query_pairs",
    "scalar",
    "segment",
)

# Visible ASCII, with spaces or tabs only between visible characters (RFC 9110 field-value).
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20\x09]*[\x21-\x7e])*)?")
_DELIMITERS = {
    "form": ",",
    "spaceDelimited": " ",
    "pipeDelimited": "|",
    "simple": ",",
    "label": ".",
}

# What a path value may not become once a server has decoded it: a character that ends its
# segment (uvicorn decodes %2F before routing; IIS and WHATWG URL parsers read a backslash as a
# slash; a proxy or an app that decodes again splits at '?' or '#') or a dot segment, which a
# server resolving dot segments (nginx, Tomcat) turns into another path. An escape is %XX, or
# %uXXXX, which IIS decodes and which is never decoded here, so it is refused; NFKC maps the
# full-width forms (U+FF0F, U+FF0E, U+2025) to these.
_ESCAPE = re.compile(r"%(?:[0-9A-Fa-f]{2}|[uU][0-9A-Fa-f]{4})")
_OUT_OF_SEGMENT = frozenset("/\\?#")
_DOT_SEGMENTS = (".", "..")
MAX_PATH_DECODINGS = 3
"""How many times over a path value is decoded to see that it stays one segment: a value still
holding an escape after that many decodings (or a ``%uXXXX`` one) is refused (no server stack
decodes so often)."""
MAX_PATH_VALUE_LENGTH = 4096
"""How many characters a path value may have, its items and keys together: a longer one is
refused before it is checked and encoded (servers refuse a request line past about 8 KB)."""


class InputRefused(ValueError):
    """An input value that the template cannot send; ``str(error)`` is written for the model."""


def scalar(prop: str, value: JsonValue) -> str:
    """A string, a number or a boolean as text (``true``/``false``, numbers as JSON writes them).

    Raises:
        InputRefused: the value is none of them.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputRefused(f"'{prop}' must be a finite number.")
        return json.dumps(value)
    if isinstance(value, list):
        raise InputRefused(f"'{prop}' must be a string, a number or a boolean, not a nested list.")
    kind = "null" if value is None else "an object"
    raise InputRefused(f"'{prop}' must be a string, a number or a boolean, not {kind}.")


def _items(prop: str, value: list[JsonValue]) -> list[str]:
    return [scalar(prop, item) for item in value]


def _members(prop: str, value: dict[str, JsonValue]) -> list[tuple[str, str]]:
    members = []
    for key, item in value.items():
        if item is None:
            continue
        if isinstance(item, (dict, list)):
            raise InputRefused(
                f"'{prop}' is an object whose values must be strings, numbers or booleans "
                f"('{key}' is not)."
            )
        members.append((key, scalar(prop, item)))
    return members


def _clean(prop: str, texts: list[str], delimiters: str) -> list[str]:
    for text in texts:
        for delimiter in delimiters:
            if delimiter in text:
                shown = "a space" if delimiter == " " else f"'{delimiter}'"
                raise InputRefused(
                    f"'{prop}' is sent joined by {shown}, so no value or key in it may hold "
                    f"{shown}."
                )
    return texts


def _flat(prop: str, members: list[tuple[str, str]], delimiter: str) -> list[str]:
    # An object not exploded: its keys and values in turn.
    return _clean(prop, [part for pair in members for part in pair], delimiter)


def query_pairs(
    prop: str, name: str, value: JsonValue, style: str | None, explode: bool | None
) -> list[tuple[str, str]]:
    """The query pairs (or form fields) that ``value`` is, unencoded: the client encodes them.

    Raises:
        InputRefused: a value the style cannot send.
    """
    style = style or "form"
    exploded = explode if explode is not None else style == "form"
    if style == "deepObject":
        if not isinstance(value, dict):
            raise InputRefused(f"'{prop}' must be an object.")
        members = _members(prop, value)
        _clean(prop, [key for key, _ in members], "[]")
        return [(f"{name}[{key}]", text) for key, text in members]
    if isinstance(value, list):
        texts = _items(prop, value)
        if exploded:
            return [(name, text) for text in texts]
        if not texts:
            return []
        delimiter = _DELIMITERS[style]
        return [(name, delimiter.join(_clean(prop, texts, delimiter)))]
    if isinstance(value, dict):
        members = _members(prop, value)
        if exploded:
            return members
        delimiter = _DELIMITERS[style]
        return [(name, delimiter.join(_flat(prop, members, delimiter)))] if members else []
    return [(name, scalar(prop, value))]


def path_text(
    prop: str, name: str, value: JsonValue, style: str | None, explode: bool | None
) -> str:
    """What ``value`` puts in the path, percent-encoded (every character but the unreserved).

    Raises:
        InputRefused: the value is missing, would be empty, ``.`` or ``..`` (which URL
            normalization turns into another path), holds what a server would read as another
            segment (see :func:`segment`), is longer than :data:`MAX_PATH_VALUE_LENGTH`, or
            cannot be sent in the style.
    """
    if value is None:
        raise InputRefused(f"'{prop}' is required: it is part of the path.")
    style = style or "simple"
    exploded = bool(explode)

    def encoded(texts: list[str]) -> list[str]:
        return [segment(prop, text) for text in texts]

    if isinstance(value, list):
        if not value:
            raise InputRefused(f"'{prop}' is part of the path and may not be an empty list.")
        texts = _short(prop, _items(prop, value))
        if style == "matrix" and exploded:
            key = quote(name, safe="")
            text = "".join(f";{key}={item}" for item in encoded(_clean(prop, texts, ";")))
        else:
            delimiter = "." if style == "label" and exploded else ","
            text = _prefix(style, name) + delimiter.join(encoded(_clean(prop, texts, delimiter)))
    elif isinstance(value, dict):
        members = _members(prop, value)
        if not members:
            raise InputRefused(f"'{prop}' is part of the path and may not be an empty object.")
        _short(prop, [part for pair in members for part in pair])
        if exploded:
            between = {"simple": ",", "label": ".", "matrix": ";"}[style]
            _clean(prop, [key for key, _ in members], "=" + between)
            _clean(prop, [item for _, item in members], between)
            pairs = [f"{segment(prop, k)}={segment(prop, v)}" for k, v in members]
            text = ("" if style == "simple" else between) + between.join(pairs)
        else:
            text = _prefix(style, name) + ",".join(encoded(_flat(prop, members, ",")))
    else:
        text = scalar(prop, value)
        _short(prop, [text])
        text = _prefix(style, name) + segment(prop, text)
    if text in ("", ".", ".."):
        raise InputRefused(f"'{prop}' is part of the path and may not be empty, '.' or '..'.")
    return text


def _short(prop: str, texts: list[str]) -> list[str]:
    if sum(map(len, texts)) > MAX_PATH_VALUE_LENGTH:
        raise InputRefused(
            f"'{prop}' is part of the path and may hold at most {MAX_PATH_VALUE_LENGTH} characters."
        )
    return texts


def segment(prop: str, text: str) -> str:
    """``text`` percent-encoded (every character but the unreserved), once it is known to stay
    inside its segment however a server decodes it: neither ``text`` nor what it decodes to (up
    to :data:`MAX_PATH_DECODINGS` times) holds ``/``, ``\\``, ``?`` or ``#`` or is a dot segment.

    Raises:
        InputRefused: it would leave its segment, naming ``prop`` (never the value).
    """
    seen = text
    for _ in range(MAX_PATH_DECODINGS + 1):
        seen = unicodedata.normalize("NFKC", seen)
        if not _OUT_OF_SEGMENT.isdisjoint(seen) or seen.strip(" \t\r\n\x00") in _DOT_SEGMENTS:
            break
        if _ESCAPE.search(seen) is None:
            return quote(text, safe="")
        seen = unquote(seen)
    raise InputRefused(
        f"'{prop}' is one segment of the path, so it may not hold '/', '\\', '?' or '#', nor be "
        "'.' or '..', written as they are or percent-encoded (such as %2F or %252F)."
    )


def _prefix(style: str, name: str) -> str:
    if style == "label":
        return "."
    if style == "matrix":
        return f";{quote(name, safe='')}="
    return ""


def header_text(prop: str, value: JsonValue, explode: bool | None) -> str | None:
    """A header's value (``None``: an empty list or object, no header).

    Raises:
        InputRefused: a value the ``simple`` style cannot send, or a character that could add or
            split a header.
    """
    if isinstance(value, list):
        texts = _header(prop, _clean(prop, _items(prop, value), ","))
        return ", ".join(texts) if texts else None
    if isinstance(value, dict):
        members = _members(prop, value)
        if not members:
            return None
        if explode:
            _clean(prop, [key for key, _ in members], "=")
            _header(prop, [f"{k}={v}" for k, v in members])
            return ",".join(_clean(prop, [f"{k}={v}" for k, v in members], ","))
        return ",".join(_header(prop, _flat(prop, members, ",")))
    return _header(prop, [scalar(prop, value)])[0]


def _header(prop: str, texts: list[str]) -> list[str]:
    for text in texts:
        if not _HEADER_VALUE.fullmatch(text):
            raise InputRefused(
                f"'{prop}' is sent as a header, which holds only printable ASCII characters, "
                "with no line break, control character or space at either end."
            )
    return texts
