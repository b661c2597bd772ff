"""HTTP operations written by hand, and the source that sends them.

The request rules: a path value is percent-encoded and may not be empty, ``.`` or ``..``; a value
is a string, a number or a boolean, or a list or an object of them written in its parameter's
OpenAPI style (``Param.style``, ``Param.explode``); a header list is joined by commas; a header
value with a character that could add or split a header is refused; the body is JSON, a form,
multipart form data or a file (``RequestTemplate.media_type`` and ``encoding``), a file given as
text or base64; the client's own headers (its credentials) come last and win. See :func:`make`
for what each answer becomes. A host with many tenants builds their clients over one pool with
:class:`Connections`.
"""

from __future__ import annotations

from amends_toolkit.actors._connections import MAX_CONNECTIONS, MAX_PER_TENANT, Connections
from amends_toolkit.actors._http import AsyncClient, HttpSource, make
from amends_toolkit.protocols.http import (
    Encoding,
    Location,
    Operation,
    Param,
    RequestTemplate,
    Style,
)

__all__ = (
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
