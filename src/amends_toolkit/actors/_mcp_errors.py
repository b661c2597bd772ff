"""Every JSON-RPC error code and HTTP status an MCP server answers, as a ToolSourceError reason.

One table, one place (a test walks it). A server's own words reach the model only in an
``InvalidInputError`` or a ``CallFailedError`` (cut to 500 characters, after the wire replaced
the client's credentials in them); the other reasons carry them in ``message`` for the host's
logs. :func:`wire_error` reads what the wire (HTTP or stdio) raised.

==========================================  =========================================
JSON-RPC error (for ``method``)             reason
==========================================  =========================================
-32602 on tools/call, "unknown tool"        NotFoundError
-32602 on tools/call, otherwise             InvalidInputError (the server's words)
-32602 on any other method                  InvalidResponseError (a cursor it gave)
-32002 (resource not found, before 2026)    NotFoundError
-32601 method not found                     UnsupportedError
-32021 missing client capability            UnsupportedError
-32022 unsupported protocol version         UnsupportedError
-32042 URL elicitation required             UnsupportedError
-32020 header mismatch (after the resend)   InvalidResponseError
-32700 / -32600 parse / invalid request     InvalidResponseError
-32603 internal error                       UnavailableError
any other code on tools/call                CallFailedError (the server's words)
any other code on any other method          InvalidResponseError
==========================================  =========================================

==========================================  =========================================
HTTP status                                 reason
==========================================  =========================================
401, 403                                    AuthenticationError
408, 429, 5xx                               UnavailableError (``retry_after`` from Retry-After,
                                            read by ``protocols.http.retry_after``)
404 (no session to renew, no JSON-RPC)      InvalidResponseError (no MCP endpoint there)
405, 406, 415                               UnsupportedError
other 4xx with a JSON-RPC error             the error's reason (table above)
other 4xx, 1xx, 3xx, other 2xx              InvalidResponseError
==========================================  =========================================

A 404 that is not a session's end is a wrong ``url`` (a host's mistake, as on ``initialize``):
telling the model to try again later would be telling it something untrue, so it is not the
retryable ``UnavailableError``; nor ``NotFoundError``, which says the tool does not exist. The
host's message says what to fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from amends_toolkit._errors import (
    AuthenticationError,
    CallFailedError,
    InvalidInputError,
    InvalidResponseError,
    NotFoundError,
    ToolSourceError,
    UnavailableError,
    UnsupportedError,
)
from amends_toolkit._json import input_refusal
from amends_toolkit._peer import cut
from amends_toolkit.protocols._body import AnswerTooLarge, UnreadableCoding
from amends_toolkit.protocols.http import outcome
from amends_toolkit.protocols.mcp._http import StreamEnded, Unreachable
from amends_toolkit.protocols.mcp._jsonrpc import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
    ErrorResponse,
    ProtocolError,
)
from amends_toolkit.protocols.mcp._stdio import ProcessEnded

if TYPE_CHECKING:
    from amends_toolkit._json import JsonValue

__all__ = (
    "WIRE_ERRORS",
    "check_input",
    "error_for_rpc",
    "error_for_status",
    "wire_error",
)

_RESOURCE_NOT_FOUND: Final = -32002
_URL_ELICITATION_REQUIRED: Final = -32042
_UNSUPPORTED: Final = frozenset(
    {METHOD_NOT_FOUND, MISSING_CAPABILITY, UNSUPPORTED_VERSION, _URL_ELICITATION_REQUIRED}
)
_UNREADABLE: Final = frozenset({PARSE_ERROR, INVALID_REQUEST, HEADER_MISMATCH})
_CALL: Final = "tools/call"


def error_for_rpc(source: str, error: ErrorResponse, *, method: str) -> ToolSourceError:
    """The reason a JSON-RPC error of ``method`` is."""
    code, said = error.code, error.message
    described = f"{method} failed with JSON-RPC error {code}: {said}"
    if code == INVALID_PARAMS:
        if method != _CALL:
            return InvalidResponseError(source=source, message=described)
        lowered = said.lower()
        if "unknown tool" in lowered or ("tool" in lowered and "not found" in lowered):
            return NotFoundError(source=source, message=described)
        return InvalidInputError(
            source=source, message=cut(said) or InvalidInputError.default_message
        )
    if code == _RESOURCE_NOT_FOUND:
        return NotFoundError(source=source, message=described)
    if code in _UNSUPPORTED:
        return UnsupportedError(source=source, message=described)
    if code in _UNREADABLE:
        return InvalidResponseError(source=source, message=described)
    if code == INTERNAL_ERROR:
        return UnavailableError(source=source, message=described)
    if method == _CALL:
        return CallFailedError(source=source, message=cut(said) or CallFailedError.default_message)
    return InvalidResponseError(source=source, message=described)


def error_for_status(
    source: str,
    status: int,
    *,
    method: str,
    error: ErrorResponse | None = None,
    retry_after: float | None = None,
) -> ToolSourceError:
    """The reason an HTTP status (and the JSON-RPC error its body held, if any) is."""
    described = f"{method} was answered with HTTP {status}"
    kind = outcome(status)
    if kind == "authentication":
        return AuthenticationError(source=source, message=described)
    if kind == "unavailable":
        return UnavailableError(source=source, message=described, retry_after=retry_after)
    if 400 <= status <= 499 and error is not None:
        return error_for_rpc(source, error, method=method)
    if status == 404:
        return InvalidResponseError(
            source=source,
            message=f"{described}: there is no MCP endpoint at the source's url; check it",
        )
    if status in (405, 406, 415):
        return UnsupportedError(source=source, message=described)
    return InvalidResponseError(source=source, message=described)


WIRE_ERRORS: Final = (
    Unreachable,
    StreamEnded,
    ProcessEnded,
    ProtocolError,
    AnswerTooLarge,
    UnreadableCoding,
)
"""What the MCP wires raise for a server's failure, each read by :func:`wire_error`."""


def wire_error(source: str, error: Exception, *, method: str) -> ToolSourceError:
    """The reason a failure of the wire is.

    ==========================================  =========================================
    What the wire raised                        reason
    ==========================================  =========================================
    no connection, a broken or ended stream,    UnavailableError
    an ended process
    a kept-alive connection reset before any    sent again, once, by the wire (see
    byte of the answer (the server's idle       ``protocols.mcp._http``); reset again:
    close met the request unread)               UnavailableError
    an answer past the source's size limit      CallFailedError on tools/call (ask for
                                                less), else InvalidResponseError
    a message that is not MCP, nested past the  InvalidResponseError
    depth limit, or in a coding not asked for
    ==========================================  =========================================
    """
    described = f"{method}: {error}"
    if isinstance(error, Unreachable | StreamEnded | ProcessEnded):
        return UnavailableError(source=source, message=described)
    if isinstance(error, AnswerTooLarge) and method == _CALL:
        return CallFailedError(
            source=source,
            message=(
                f"The answer is longer than {error.limit} bytes. Ask for less: use a filter, "
                "a smaller page or fewer fields."
            ),
        )
    return InvalidResponseError(source=source, message=described)


def check_input(source: str, input: JsonValue, *, max_depth: int) -> None:
    """Refuse an input no server may be sent: NaN or Infinity (no JSON), or nested too deep.

    Raises:
        InvalidInputError: saying which, for the model.
    """
    problem = input_refusal(input, max_depth=max_depth)
    if problem is not None:
        raise InvalidInputError(source=source, message=problem)
