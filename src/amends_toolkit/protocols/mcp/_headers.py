"""The headers that mirror a tool's parameters (``x-mcp-header``, 2026-07-28) and their encoding.

A server of the stateless protocol may mark parameters of a tool with ``x-mcp-header`` so that a
load balancer can route on them; a call then sends each marked argument it gives as
``Mcp-Param-<mark>`` too. The rules are those of the released 2026-07-28 spec
(``basic/transports/streamable-http`` § Custom Headers): a mark is a non-empty RFC 9110 token,
unique without regard to case, on a property of type ``string``, ``integer`` or ``boolean`` (not
``number``), reached from the root only through ``properties``. A tool that breaks one is left
out of discover by the source. Values (and tool names in ``Mcp-Name``) that a header cannot hold
as they are go as ``=?base64?<UTF-8 in base64>?=``.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Final, Literal

import attrs

from amends_toolkit._schema_keywords import (
    DEFINITIONS,
    NAMED_SCHEMAS,
    ONE_SCHEMA,
    PATTERN_SCHEMAS,
    SCHEMA_LISTS,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from amends_toolkit._json import JsonValue

__all__ = (
    "PARAM_PREFIX",
    "HeaderMark",
    "InvalidMarks",
    "encode_value",
    "param_headers",
    "read_marks",
    "render_value",
)

PARAM_PREFIX: Final = "Mcp-Param-"
_KEY: Final = "x-mcp-header"
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PLAIN: Final = re.compile(r"[\x20-\x7e]*")
_SENTINEL: Final = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_SAFE_INTEGER: Final = 2**53 - 1

# JSON Schema 2020-12 applicators other than ``properties``: a mark under one of them is not
# statically reachable, which makes the tool invalid. Instance data (``default``, ``enum``,
# ``const``, ``examples``) is never entered, and ``$ref`` is never followed.
_MAP: Final = (NAMED_SCHEMAS - {"properties"}) | PATTERN_SCHEMAS | DEFINITIONS

MarkType = Literal["string", "integer", "boolean"]
_TYPES: Final[dict[object, MarkType]] = {
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
}


class InvalidMarks(ValueError):
    """A tool's ``x-mcp-header`` marks break a rule of the protocol; the message says which."""


@attrs.frozen(kw_only=True)
class HeaderMark:
    """One marked parameter: the ``properties`` path to it, its header's token, its type."""

    path: tuple[str, ...]
    token: str
    type: MarkType

    @property
    def header(self) -> str:
        """The header's name: ``Mcp-Param-<token>``, case kept."""
        return PARAM_PREFIX + self.token


def read_marks(schema: JsonValue) -> tuple[HeaderMark, ...]:
    """The marks of a tool's input schema, in schema order.

    Raises:
        InvalidMarks: a mark breaks a rule of the 2026-07-28 spec (the reason names the property).
    """
    marks: list[HeaderMark] = []
    seen: dict[str, str] = {}
    for path, node in _positions(schema):
        if _KEY not in node:
            continue
        if not path:
            raise InvalidMarks(f"{_KEY} is on a schema position not reached through properties")
        where = ".".join(path)
        token = node[_KEY]
        if not isinstance(token, str):
            raise InvalidMarks(f"property {where!r}: {_KEY} is not a string")
        if not _TOKEN.fullmatch(token):
            raise InvalidMarks(f"property {where!r}: {_KEY} {token!r} is not an RFC 9110 token")
        declared = node.get("type")
        kind = _TYPES.get(declared) if isinstance(declared, str) else None
        if kind is None:
            raise InvalidMarks(
                f"property {where!r}: {_KEY} is only allowed on a string, integer or boolean "
                f"(the type is {declared!r})"
            )
        folded = token.lower()
        if folded in seen:
            raise InvalidMarks(
                f"property {where!r}: {_KEY} {token!r} repeats the mark of {seen[folded]!r}"
            )
        seen[folded] = where
        marks.append(HeaderMark(path=path, token=token, type=kind))
    return tuple(marks)


def _positions(root: JsonValue) -> Iterator[tuple[tuple[str, ...] | None, dict[str, JsonValue]]]:
    """Each schema position with its ``properties`` path, or ``None`` once off that chain.

    Depth-first in document order, with an explicit stack so that no schema is too deep.
    """
    stack: list[tuple[tuple[str, ...] | None, JsonValue]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        children: list[tuple[tuple[str, ...] | None, JsonValue]] = []
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                children.extend(
                    ((*path, name) if path is not None else None, sub)
                    for name, sub in value.items()
                )
            elif keyword in ONE_SCHEMA:
                children.append((None, value))
            elif keyword in SCHEMA_LISTS and isinstance(value, list):
                children.extend((None, sub) for sub in value)
            elif keyword in _MAP and isinstance(value, dict):
                children.extend((None, sub) for sub in value.values())
        stack.extend(reversed(children))


def encode_value(value: str) -> str:
    """A header value as it may go on the wire.

    Printable ASCII without a space or tab at either end goes as it is; anything else, and a
    value that looks like the sentinel itself, goes as ``=?base64?...?=`` (standard base64 with
    padding), so that no value can add a header or lose a byte.
    """
    if _PLAIN.fullmatch(value) and value == value.strip(" \t") and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def render_value(value: JsonValue) -> str | None:
    """An argument as header text (before encoding), or ``None`` when it has no header form.

    ``true``/``false``; an integer (or a float with an integral value) in decimal; a string
    as it is. ``None``, objects, lists and integers past JavaScript's safe range have none.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value) if abs(value) <= _SAFE_INTEGER else None
    if isinstance(value, str):
        return value
    return None


def param_headers(
    marks: tuple[HeaderMark, ...], arguments: Mapping[str, JsonValue]
) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a call with these arguments sends.

    An argument that is absent or ``null`` sends no header (the server must not expect one).
    """
    headers: dict[str, str] = {}
    for mark in marks:
        value: JsonValue = dict(arguments)
        for step in mark.path:
            value = value.get(step) if isinstance(value, dict) else None
        text = render_value(value)
        if text is not None:
            headers[mark.header] = encode_value(text)
    return headers
