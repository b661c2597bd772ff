"""An HTTP operation as data: a tool's definition and the request template its input fills.

A template says where each property of a tool's input goes (a path segment, a query parameter or
a header) and which property holds the JSON body. It is checked when it is made, so a catalog
never holds a template whose path and parameters disagree, nor one that lets the model set a
header that frames, routes or authorizes the request (:func:`refused_header`).
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

import attrs
from cattrs.gen import override

from amends_toolkit._catalog import register
from amends_toolkit._definitions import ToolDefinition

__all__ = ("Location", "Operation", "Param", "RequestTemplate", "placeholders", "refused_header")

Location: TypeAlias = Literal["path", "query", "header"]
"""Where a property of the input goes on the wire."""

_LOCATIONS = ("path", "query", "header")
_METHOD = re.compile(r"[A-Z]+")
# RFC 9110 token: the characters a header name may have.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
# A path is sent as written (only values are encoded): visible ASCII, no query or fragment.
_PATH = re.compile(r"/[!$&'()*+,\-./0-9:;=@A-Z\[\]_a-z{}~%]*")


# The model gives values, never framing, routing or credentials: a header that frames the message
# (RFC 9112), is hop-by-hop (RFC 9110 7.6.1), routes it through a proxy or to another host or
# method, or carries credentials or cookies, is the client's to set.
_FRAMING = frozenset(
    {"content-length", "transfer-encoding", "te", "trailer", "expect", "upgrade", "connection"}
)
_HOP_BY_HOP = frozenset({"keep-alive", "proxy-connection"})
_ROUTING = frozenset(
    {
        "host",
        "forwarded",
        "via",
        "x-real-ip",
        "x-client-ip",
        "true-client-ip",
        "x-original-url",
        "x-rewrite-url",
        "x-http-method-override",
        "x-http-method",
        "x-method-override",
    }
)
_CREDENTIALS = frozenset(
    {"authorization", "cookie", "api-key", "x-api-key", "x-auth-token", "x-access-token"}
)
# The body's own description, and what the source reads (gzip or deflate only).
_BODY = frozenset({"content-type", "content-encoding", "accept-encoding"})
_REFUSED_PREFIXES = ("proxy-", "x-forwarded-", "sec-")


def refused_header(name: str) -> str | None:
    """Why a header may not be a parameter the model fills, or ``None`` when it may be.

    Framing and hop-by-hop headers (``Content-Length``, ``Transfer-Encoding``, ``Connection``,
    ``TE``, ``Upgrade``...), routing and proxy headers (``Host``, ``Forwarded``,
    ``X-Forwarded-*``, ``Proxy-*``, method overrides), credentials (``Authorization``, ``Cookie``,
    API keys) and the body's own headers are the client's, never the model's.
    """
    lowered = name.lower()
    if lowered in _FRAMING or lowered in _HOP_BY_HOP:
        return "frames the request"
    if lowered in _ROUTING or lowered.startswith(_REFUSED_PREFIXES):
        return "routes the request"
    if lowered in _CREDENTIALS:
        return "carries credentials, which are the client's"
    if lowered in _BODY:
        return "describes the body, which the source does"
    return None


def placeholders(path: str) -> list[str]:
    """The names between braces in a path template, in order."""
    return _PLACEHOLDER.findall(path)


@attrs.frozen(kw_only=True)
class Param:
    """Where one property of the input goes: ``location`` and the ``name`` on the wire.

    A path parameter's name is the one between braces in the template's path.
    """

    location: Location = attrs.field()
    name: str = attrs.field()

    @location.validator
    def _check_location(self, _attribute: object, value: object) -> None:
        if value not in _LOCATIONS:
            raise ValueError(f"a parameter goes in the path, query or header, not {value!r}")

    @name.validator
    def _check_name(self, _attribute: object, value: object) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError("a parameter's name on the wire must be a non-empty string")
        if self.location == "header" and not _TOKEN.fullmatch(value):
            raise ValueError(f"{value!r} cannot be a header name (RFC 9110 token characters only)")
        why = refused_header(value) if self.location == "header" else None
        if why is not None:
            raise ValueError(
                f"header {value!r} {why}: the model may not set it; the host's client sets "
                "such headers"
            )
        if self.location == "path" and ("{" in value or "}" in value):
            raise ValueError(f"a path parameter's name may not hold braces: {value!r}")


@attrs.frozen(kw_only=True)
class RequestTemplate:
    """The request an operation sends: ``method``, ``path`` (with ``{name}`` for each path
    parameter), where each input property goes (``params``), and the property holding the JSON
    body (``body``), if any.

    Raises:
        ValueError: the method is not an upper-case token, the path does not start with ``/`` or
            holds a query, or its placeholders and the path parameters do not match one to one.
    """

    method: str = attrs.field()
    path: str = attrs.field()
    params: dict[str, Param] = attrs.field(factory=dict)
    body: str | None = attrs.field(default=None)

    @method.validator
    def _check_method(self, _attribute: object, value: object) -> None:
        if not isinstance(value, str) or not _METHOD.fullmatch(value):
            raise ValueError(f"method must be an upper-case HTTP method such as GET, not {value!r}")

    @path.validator
    def _check_path(self, _attribute: object, value: object) -> None:
        if not isinstance(value, str) or not _PATH.fullmatch(value):
            raise ValueError(
                f"path must start with '/' and hold only URL path characters "
                f"(no query, fragment, space or control character): {value!r}"
            )

    @params.validator
    def _check_params(self, _attribute: object, value: dict[str, Param]) -> None:
        for prop, param in value.items():
            if not isinstance(prop, str) or not prop:
                raise ValueError("each parameter is named by a non-empty input property")
            if not isinstance(param, Param):
                raise ValueError(f"parameter {prop!r} must be an at.http.Param")
        in_path = placeholders(self.path)
        if len(set(in_path)) != len(in_path):
            raise ValueError(f"path {self.path!r} names a placeholder twice")
        path_names = [p.name for p in value.values() if p.location == "path"]
        if sorted(path_names) != sorted(in_path):
            raise ValueError(
                f"path {self.path!r} has placeholders {sorted(in_path)} but the path parameters "
                f"are {sorted(path_names)}; each {{name}} needs exactly one Param('path', name)"
            )
        headers = [p.name.lower() for p in value.values() if p.location == "header"]
        if len(set(headers)) != len(headers):
            raise ValueError("two properties go to one header")

    @body.validator
    def _check_body(self, _attribute: object, value: object) -> None:
        if value is None:
            return
        if not isinstance(value, str) or not value:
            raise ValueError("body names the input property that holds the JSON body, or is None")
        if value in self.params:
            raise ValueError(f"property {value!r} cannot be both the body and a parameter")


@attrs.frozen(kw_only=True)
class Operation:
    """A tool that is an HTTP request: its ``definition`` and the ``request`` its input fills.

    It is data: ``at.catalog.dump(operation)`` gives the JSON a catalog stores, and
    ``at.catalog.load(at.http.Operation, data)`` reads it back.
    """

    definition: ToolDefinition
    request: RequestTemplate


register(Param, location=override(rename="in"))
register(RequestTemplate)
register(Operation)
