"""An HTTP operation as data: a tool's definition and the request template its input fills.

A template says where each property of a tool's input goes (a path segment, a query parameter or
a header, each in an OpenAPI style), which property holds the body, and the body's media type
(JSON, a form, multipart form data, or a file's bytes) with how each field of a form is sent.
It is checked when it is made, so a catalog never holds a template whose path and parameters
disagree, a style its place cannot have, nor one that lets the model set a header that frames,
routes or authorizes the request (:func:`refused_header`).
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias, TypeGuard

import attrs
from cattrs.gen import override

from amends_toolkit._catalog import register
from amends_toolkit._definitions import ToolDefinition

__all__ = (
    "FORM",
    "MULTIPART",
    "Encoding",
    "Location",
    "Operation",
    "Param",
    "RequestTemplate",
    "Style",
    "is_media_type",
    "placeholders",
    "refused_header",
    "style_problem",
)

Location: TypeAlias = Literal["path", "query", "header"]
"""Where a property of the input goes on the wire."""

Style: TypeAlias = Literal[
    "simple", "label", "matrix", "form", "spaceDelimited", "pipeDelimited", "deepObject"
]
"""How a value is written in its place (OpenAPI 3.1's ``style``)."""

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"

# The styles each place may have, its default first (OpenAPI 3.1, 4.8.12.4).
_STYLES: dict[str, tuple[str, ...]] = {
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject"),
    "header": ("simple",),
}
# A media type as a Content-Type names it, without parameters (RFC 6838 names).
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*"
_MEDIA_TYPE = re.compile(rf"{_NAME}/{_NAME}")
_MEDIA_RANGE = re.compile(rf"(?:{_NAME}|\*)/(?:{_NAME}|\*)")


def is_media_type(value: object, *, wildcard: bool = False) -> TypeGuard[str]:
    """Whether ``value`` is a media type such as ``image/png`` with no parameters (or, with
    ``wildcard``, a range such as ``image/*``): what may follow ``Content-Type:``."""
    pattern = _MEDIA_RANGE if wildcard else _MEDIA_TYPE
    return isinstance(value, str) and pattern.fullmatch(value) is not None


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
        "x-host",
        "x-original-host",
        "forwarded",
        "x-forwarded",
        "via",
        "x-real-ip",
        "x-client-ip",
        "true-client-ip",
        "cf-connecting-ip",
        "fastly-client-ip",
        "x-cluster-client-ip",
        "x-originating-ip",
        "x-remote-ip",
        "x-remote-addr",
        "x-original-url",
        "x-rewrite-url",
        "x-http-method-override",
        "x-http-method",
        "x-method-override",
    }
)
# Credentials, and the caller's identity as an authenticating proxy passes it on (to an API that
# trusts it, the same thing): any name with one of these words (X-Goog-Api-Key, Private-Token,
# Ocp-Apim-Subscription-Key, X-Hub-Signature-256, X-CSRFToken, X-Amz-Security-Token, ...) unless
# a word says it is an idempotency key or a page's token, and the names no word gives away.
_CREDENTIAL_WORDS = frozenset(
    {
        "token",
        "key",
        "apikey",
        "secret",
        "signature",
        "hmac",
        "password",
        "otp",
        "credential",
        "auth",
        "authorization",
        "authentication",
        "authenticated",
        "principal",
        "oidc",
        "userinfo",
        "jwt",
        "session",
        "csrftoken",
        "cookie",
    }
)
_ORDINARY_WORDS = frozenset({"idempotency", "continuation", "page"})
_CREDENTIALS = frozenset(
    {
        "remote-user",
        "x-remote-user",
        "x-webauth-user",
        "x-consumer-id",
        "x-consumer-custom-id",
        "x-consumer-username",
        "x-honeycomb-team",
        "x-jfrog-art-api",
        "x-firebase-appcheck",
        "servicebusauthorization",
    }
)
_WORD = re.compile(r"[-_.]")
# The body's own description, and what the source reads (gzip or deflate only).
_BODY = frozenset({"content-type", "content-encoding", "accept-encoding"})
_REFUSED_PREFIXES = ("proxy-", "x-forwarded-", "sec-")


def refused_header(name: str) -> str | None:
    """Why a header may not be a parameter the model fills, or ``None`` when it may be.

    Framing and hop-by-hop headers (``Content-Length``, ``Transfer-Encoding``, ``Connection``,
    ``TE``, ``Upgrade``...), routing and proxy headers (``Host``, ``Forwarded``,
    ``X-Forwarded-*``, ``Proxy-*``, client addresses, method overrides), credentials
    (``Authorization``, ``Cookie``, any name with a word such as ``token``, ``key``, ``secret``,
    ``signature`` or ``session`` but for an idempotency key or a page's token, and vendors'
    others), the caller's identity as a proxy passes it on, and the body's own headers are the
    client's, never the model's. Names are compared without case.
    """
    lowered = name.lower()
    if lowered in _FRAMING or lowered in _HOP_BY_HOP:
        return "frames the request"
    if lowered in _ROUTING or lowered.startswith(_REFUSED_PREFIXES):
        return "routes the request"
    words = set(_WORD.split(lowered))
    if lowered in _CREDENTIALS or (
        not words.isdisjoint(_CREDENTIAL_WORDS) and words.isdisjoint(_ORDINARY_WORDS)
    ):
        return "carries credentials or the caller's identity, which are the client's"
    if lowered in _BODY:
        return "describes the body, which the source does"
    return None


def placeholders(path: str) -> list[str]:
    """The names between braces in a path template, in order."""
    return _PLACEHOLDER.findall(path)


def style_problem(location: str, style: object, explode: object) -> str | None:
    """Why a value cannot be sent in ``location`` with ``style`` and ``explode``, or ``None``.

    ``None`` for either means the default: the place's first style (``simple`` in the path and
    headers, ``form`` in the query), exploded for ``form`` only. A form body's fields take the
    query's styles. The combinations OpenAPI leaves undefined (an exploded ``spaceDelimited`` or
    ``pipeDelimited``, a ``deepObject`` not exploded) are refused.
    """
    if explode is not None and not isinstance(explode, bool):
        return f"explode must be true or false, not {explode!r}"
    if style is None:
        return None
    allowed = _STYLES.get(location, ())
    if style not in allowed:
        return f"style {style!r} is not one of {', '.join(allowed)} (the styles of the {location})"
    if style in ("spaceDelimited", "pipeDelimited") and explode is True:
        return f"style {style!r} is not defined with explode=true"
    if style == "deepObject" and explode is False:
        return "style 'deepObject' is defined only with explode=true"
    return None


@attrs.frozen(kw_only=True)
class Param:
    """Where one property of the input goes: ``location`` and the ``name`` on the wire, and how
    its value is written there: ``style`` and ``explode`` as OpenAPI 3.1 says, ``None`` for the
    place's default (``simple``, or ``form`` exploded in the query).

    A path parameter's name is the one between braces in the template's path.

    Raises:
        ValueError: a location, name or style the place cannot have.
    """

    location: Location = attrs.field()
    name: str = attrs.field()
    style: Style | None = None
    explode: bool | None = None

    def __attrs_post_init__(self) -> None:
        problem = style_problem(self.location, self.style, self.explode)
        if problem is not None:
            raise ValueError(f"parameter {self.name!r}: {problem}")

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
class Encoding:
    """How one field of a form body is sent (OpenAPI's Encoding Object).

    In a form (``application/x-www-form-urlencoded``) a field is written as a query parameter
    would be, with ``style`` and ``explode``. In multipart form data each field is a part: a
    ``file`` field's value is a file the model gives as text or base64; ``content_type`` is the
    part's ``Content-Type`` (by default ``text/plain`` for a string, ``application/json`` for an
    object, ``application/octet-stream`` for a file without one of its own).

    Raises:
        ValueError: a style a form field cannot have, or a content type that is no media type.
    """

    content_type: str | None = None
    style: Style | None = None
    explode: bool | None = None
    file: bool = False

    def __attrs_post_init__(self) -> None:
        problem = style_problem("query", self.style, self.explode)
        if problem is not None:
            raise ValueError(problem)
        if self.content_type is not None and not is_media_type(self.content_type, wildcard=True):
            raise ValueError(
                f"content_type must be a media type such as text/plain, not {self.content_type!r}"
            )
        if not isinstance(self.file, bool):
            raise ValueError("file must be true or false")


@attrs.frozen(kw_only=True)
class RequestTemplate:
    """The request an operation sends: ``method``, ``path`` (with ``{name}`` for each path
    parameter), where each input property goes (``params``), the property holding the body
    (``body``), if any, and how the body is sent: ``media_type`` (``None`` for
    ``application/json``; a form, multipart form data, or any other type for a file's bytes),
    ``encoding``, how each field of a form or multipart body is sent, and ``query``, pairs sent
    with every request whatever the input (``{"beta": "true"}``).

    Raises:
        ValueError: the method is not an upper-case token, the path does not start with ``/`` or
            holds a query, its placeholders and the path parameters do not match one to one, the
            body's media type or encoding is not one it can have, or a fixed query pair is also
            a parameter.
    """

    method: str = attrs.field()
    path: str = attrs.field()
    params: dict[str, Param] = attrs.field(factory=dict)
    body: str | None = attrs.field(default=None)
    media_type: str | None = attrs.field(default=None)
    encoding: dict[str, Encoding] = attrs.field(factory=dict)
    query: dict[str, str] = attrs.field(factory=dict)

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

    @media_type.validator
    def _check_media_type(self, _attribute: object, value: object) -> None:
        if value is None:
            return
        if not is_media_type(value, wildcard=True):
            raise ValueError(f"media_type must be a media type such as {FORM}, not {value!r}")
        if self.body is None:
            raise ValueError("a media_type needs a body property")

    @query.validator
    def _check_query(self, _attribute: object, value: dict[str, str]) -> None:
        names = {p.name for p in self.params.values() if p.location == "query"}
        for key, item in value.items():
            if not isinstance(key, str) or not key or not isinstance(item, str):
                raise ValueError(
                    "each query pair the template sends is a non-empty name and a string"
                )
            if key in names:
                raise ValueError(f"query {key!r} is both sent as given and a parameter")

    @encoding.validator
    def _check_encoding(self, _attribute: object, value: dict[str, Encoding]) -> None:
        if not value:
            return
        if self.media_type not in (FORM, MULTIPART):
            raise ValueError(f"only a {FORM} or {MULTIPART} body has an encoding")
        for field, encoding in value.items():
            if not isinstance(field, str) or not field:
                raise ValueError("each encoding is named by a non-empty field")
            if not isinstance(encoding, Encoding):
                raise ValueError(f"encoding {field!r} must be an at.http.Encoding")
            if self.media_type == FORM and (encoding.file or encoding.content_type):
                raise ValueError(f"field {field!r} of a form has no file or content type")
            if self.media_type == MULTIPART and (encoding.style or encoding.explode is not None):
                raise ValueError(f"field {field!r} of multipart form data has no style")


@attrs.frozen(kw_only=True)
class Operation:
    """A tool that is an HTTP request: its ``definition`` and the ``request`` its input fills.

    It is data: ``at.catalog.dump(operation)`` gives the JSON a catalog stores, and
    ``at.catalog.load(at.http.Operation, data)`` reads it back.

    Raises:
        ValueError: a part given as plain data (a dict) rather than its class, naming the fix.
    """

    definition: ToolDefinition = attrs.field()
    request: RequestTemplate = attrs.field()

    @definition.validator
    def _check_definition(self, _attribute: object, value: object) -> None:
        if not isinstance(value, ToolDefinition):
            raise ValueError(
                f"definition must be an at.ToolDefinition, not {type(value).__name__}; read "
                "stored catalog JSON with at.catalog.load(at.http.Operation, data)"
            )

    @request.validator
    def _check_request(self, _attribute: object, value: object) -> None:
        if not isinstance(value, RequestTemplate):
            raise ValueError(
                f"request must be an at.http.RequestTemplate, not {type(value).__name__}; read "
                "stored catalog JSON with at.catalog.load(at.http.Operation, data)"
            )


register(Param, omit_none=True, location=override(rename="in"))
register(Encoding, omit_default=("content_type", "style", "explode", "file"))
register(RequestTemplate, omit_default=("media_type", "encoding", "query"))
register(Operation)
