"""Building the request an operation's input fills, by the rules that keep the model to its places.

What the model gives fills the places a template has for it and decides nothing else:

- a path value is percent-encoded (every character but the unreserved ones, so ``/``, ``?`` and
  ``#`` too) and may not be empty, ``.`` or ``..``, which URL normalization would turn into
  another operation;
- a value is a string, a number or a boolean (``true``/``false``, numbers as JSON writes them);
- a query parameter may take a list of values, sent as a key for each value;
- a header may take a list, joined by ``", "``; a header value may hold only visible ASCII and
  inner spaces or tabs, so that no value adds or splits a header;
- a ``null`` or a missing property leaves its query parameter or header out; a path value is
  required;
- the body property, when given, is sent as JSON;
- no value holds NaN or Infinity (which are no JSON), or nests more than ``max_depth`` levels.

A value that breaks a rule raises :class:`InputRefused` with words written for the model.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING
from urllib.parse import quote

import attrs

from amends_toolkit._json import MAX_DEPTH, input_refusal

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.protocols.http._template import RequestTemplate

__all__ = ("InputRefused", "WireRequest", "build_request", "join_url")

# Visible ASCII, with spaces or tabs only between visible characters (RFC 9110 field-value).
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20\x09]*[\x21-\x7e])*)?")


class InputRefused(ValueError):
    """An input value that the template cannot send; ``str(error)`` is written for the model."""


@attrs.frozen(kw_only=True)
class WireRequest:
    """The parts of a request an input filled: the client sends it to ``url``."""

    method: str
    url: str
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    content: bytes | None


def join_url(base_url: str, path: str) -> str:
    """The base URL (which may have a path of its own) followed by an operation's path."""
    return base_url.rstrip("/") + path


def build_request(
    template: RequestTemplate, input: JsonObject, *, base_url: str, max_depth: int = MAX_DEPTH
) -> WireRequest:
    """The request ``input`` fills in ``template``, sent to ``base_url``.

    Raises:
        InputRefused: a value breaks one of the rules above; the message tells the model which.
    """
    problem = input_refusal(input, max_depth=max_depth)
    if problem is not None:
        raise InputRefused(problem)
    path = template.path
    query: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    for prop, param in template.params.items():
        value = input.get(prop)
        if param.location == "path":
            segment = _path_value(prop, value)
            path = path.replace("{" + param.name + "}", segment)
        elif value is None:
            continue
        elif param.location == "query":
            values = value if isinstance(value, list) else [value]
            query.extend((param.name, _scalar(prop, item)) for item in values)
        else:
            values = value if isinstance(value, list) else [value]
            if not values:
                continue
            text = ", ".join(_header_value(prop, item) for item in values)
            headers.append((param.name, text))
    content: bytes | None = None
    if template.body is not None and template.body in input:
        content = json.dumps(
            input[template.body], ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode()
        headers.append(("Content-Type", "application/json"))
    return WireRequest(
        method=template.method,
        url=join_url(base_url, path),
        query=query,
        headers=headers,
        content=content,
    )


def _scalar(prop: str, value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, list):
        raise InputRefused(f"'{prop}' must be a string, a number or a boolean, not a nested list.")
    kind = "null" if value is None else "an object"
    raise InputRefused(f"'{prop}' must be a string, a number or a boolean, not {kind}.")


def _path_value(prop: str, value: JsonValue) -> str:
    if value is None:
        raise InputRefused(f"'{prop}' is required: it is part of the path.")
    if isinstance(value, list):
        raise InputRefused(f"'{prop}' is part of the path: give one string, number or boolean.")
    text = _scalar(prop, value)
    if text in ("", ".", ".."):
        raise InputRefused(f"'{prop}' is part of the path and may not be empty, '.' or '..'.")
    return quote(text, safe="")


def _header_value(prop: str, value: JsonValue) -> str:
    text = _scalar(prop, value)
    if not _HEADER_VALUE.fullmatch(text):
        raise InputRefused(
            f"'{prop}' is sent as a header, which holds only printable ASCII characters, with no "
            "line break, control character or space at either end."
        )
    return text
