"""HTTP requests from templates, and what their answers mean. No actors, no ToolSourceError."""

from __future__ import annotations

from amends_toolkit.protocols.http._request import (
    InputRefused,
    WireRequest,
    build_request,
    join_url,
)
from amends_toolkit.protocols.http._response import (
    BoundedText,
    Outcome,
    UnreadableAnswer,
    charset,
    is_json,
    outcome,
    parse_answer,
    retry_after,
)
from amends_toolkit.protocols.http._template import (
    Location,
    Operation,
    Param,
    RequestTemplate,
    placeholders,
    refused_header,
)

__all__ = (
    "BoundedText",
    "InputRefused",
    "Location",
    "Operation",
    "Outcome",
    "Param",
    "RequestTemplate",
    "UnreadableAnswer",
    "WireRequest",
    "build_request",
    "charset",
    "is_json",
    "join_url",
    "outcome",
    "parse_answer",
    "placeholders",
    "refused_header",
    "retry_after",
)
