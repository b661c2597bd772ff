"""HTTP requests from templates, and what their answers mean. No actors, no ToolSourceError."""

from __future__ import annotations

from amends_toolkit.protocols.http._client import check_client, network_failure, where
from amends_toolkit.protocols.http._request import (
    InputRefused,
    WireRequest,
    build_request,
    join_url,
)
from amends_toolkit.protocols.http._response import (
    FAILURE_TEXT_LENGTH,
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
)

__all__ = (
    "FAILURE_TEXT_LENGTH",
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
    "check_client",
    "is_json",
    "join_url",
    "network_failure",
    "outcome",
    "parse_answer",
    "placeholders",
    "retry_after",
    "where",
)
