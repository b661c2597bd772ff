"""HTTP requests from templates, and what their answers mean. No actors, no ToolSourceError."""

from __future__ import annotations

from amends_toolkit.protocols.http._bodies import encode_body, file_schema
from amends_toolkit.protocols.http._client import (
    HttpClient,
    HttpResponse,
    check_client,
    client_url,
    libraries,
    library_of,
    network_failure,
    request_timeout,
    where,
)
from amends_toolkit.protocols.http._request import (
    MAX_BODY_SIZE,
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
from amends_toolkit.protocols.http._styles import MAX_PATH_DECODINGS, MAX_PATH_VALUE_LENGTH
from amends_toolkit.protocols.http._template import (
    FORM,
    MULTIPART,
    Encoding,
    Location,
    Operation,
    Param,
    RequestTemplate,
    Style,
    is_media_type,
    placeholders,
    refused_header,
    style_problem,
)

__all__ = (
    "FORM",
    "MAX_BODY_SIZE",
    "MAX_PATH_DECODINGS",
    "MAX_PATH_VALUE_LENGTH",
    "MULTIPART",
    "BoundedText",
    "Encoding",
    "HttpClient",
    "HttpResponse",
    "InputRefused",
    "Location",
    "Operation",
    "Outcome",
    "Param",
    "RequestTemplate",
    "Style",
    "UnreadableAnswer",
    "WireRequest",
    "build_request",
    "charset",
    "check_client",
    "client_url",
    "encode_body",
    "file_schema",
    "is_json",
    "is_media_type",
    "join_url",
    "libraries",
    "library_of",
    "network_failure",
    "outcome",
    "parse_answer",
    "placeholders",
    "refused_header",
    "request_timeout",
    "retry_after",
    "style_problem",
    "where",
)
