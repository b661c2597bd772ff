"""JSON-RPC 2.0 messages of MCP: building what a client sends, reading what a server answers.

Transport-independent: the HTTP transport and the stdio transport both frame these messages.
A message that is not JSON-RPC raises :class:`ProtocolError`, which a source reports as
``InvalidResponseError``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs

from amends_toolkit._json import MAX_DEPTH, JsonObject, JsonRefused, JsonValue, loads

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = (
    "CLIENT_INFO",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_MESSAGE_BYTES",
    "METHOD_NOT_FOUND",
    "MISSING_CAPABILITY",
    "MODERN_VERSION",
    "PARSE_ERROR",
    "SESSION_VERSIONS",
    "UNSUPPORTED_VERSION",
    "ErrorResponse",
    "Message",
    "Notification",
    "ProtocolError",
    "Request",
    "RequestId",
    "Response",
    "decode",
    "encode",
    "error_response",
    "initialize_params",
    "modern_meta",
    "notification",
    "parse_message",
    "parse_messages",
    "request",
    "result_response",
)

MODERN_VERSION: Final = "2026-07-28"
"""The stateless protocol: every request carries its version, no session."""

SESSION_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The versions begun with ``initialize``, newest first; the first is the one offered."""

CLIENT_INFO: Final[JsonObject] = {"name": "amends-toolkit", "version": "0.1.0"}

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_CAPABILITY: Final = -32021
UNSUPPORTED_VERSION: Final = -32022

MAX_MESSAGE_BYTES: Final = 8 * 1024 * 1024
"""The longest message read from a server by default: a JSON body, one event of a stream, one
line of stdio. A tool list of a thousand tools is a few hundred KiB."""

RequestId: TypeAlias = int | str


class ProtocolError(Exception):
    """What the server sent is not the MCP it should be (garbage, a malformed message)."""


@attrs.frozen(kw_only=True)
class Response:
    """A result for one of our requests."""

    id: RequestId
    result: JsonObject


@attrs.frozen(kw_only=True)
class ErrorResponse:
    """An error for one of our requests (``id`` is ``None`` when the server could not read it)."""

    id: RequestId | None
    code: int
    message: str
    data: JsonValue = None


@attrs.frozen(kw_only=True)
class Request:
    """A request the server makes of its client (only sessions may: ``ping`` and others)."""

    id: RequestId
    method: str
    params: JsonObject


@attrs.frozen(kw_only=True)
class Notification:
    """A notification from the server (progress, a log line): read and let go."""

    method: str
    params: JsonObject


Message: TypeAlias = Response | ErrorResponse | Request | Notification


def request(id: RequestId, method: str, params: JsonObject | None = None) -> JsonObject:
    """A request message."""
    message: JsonObject = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: JsonObject | None = None) -> JsonObject:
    """A notification message (no ``id``, no answer)."""
    message: JsonObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result_response(id: RequestId, result: JsonObject) -> JsonObject:
    """Our answer to a server's request."""
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: RequestId, code: int, message: str) -> JsonObject:
    """Our error for a server's request."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def modern_meta() -> JsonObject:
    """The ``_meta`` every 2026-07-28 request carries: version, capabilities (none), client."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": dict(CLIENT_INFO),
    }


def initialize_params(version: str = SESSION_VERSIONS[0]) -> JsonObject:
    """The params of ``initialize``: the newest session version, no capabilities."""
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": dict(CLIENT_INFO)}


def encode(message: Mapping[str, JsonValue]) -> bytes:
    """A message as the bytes of one JSON document (UTF-8, no newline inside)."""
    return _ENCODER.encode(message).encode()


# One encoder for every message: json.dumps with an option builds a new one each call.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> list[Message]:
    """Read one JSON body: a message, or a batch (a 2025-03-26 array) of them.

    Raises:
        ProtocolError: the body is not JSON (``NaN`` is not), nests more than ``max_depth``
            levels, or holds something that is no JSON-RPC message.
    """
    try:
        value = loads(body, max_depth=max_depth)
    except JsonRefused as error:
        raise ProtocolError(f"the body is not MCP: {error}") from None
    return parse_messages(value)


def parse_messages(value: JsonValue) -> list[Message]:
    """A message, or each message of a batch."""
    if isinstance(value, list):
        return [parse_message(item) for item in value]
    return [parse_message(value)]


def parse_message(value: JsonValue) -> Message:
    """Read one JSON-RPC message.

    Raises:
        ProtocolError: it is not an object of JSON-RPC 2.0 with a known shape.
    """
    if not isinstance(value, dict):
        raise ProtocolError("a message is not a JSON object")
    if value.get("jsonrpc") != "2.0":
        raise ProtocolError("a message is not JSON-RPC 2.0")
    id_ = value.get("id")
    method = value.get("method")
    if isinstance(method, str):
        params = value.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ProtocolError(f"the params of {method!r} are not an object")
        if "id" not in value:
            return Notification(method=method, params=params)
        return Request(id=_request_id(id_), method=method, params=params)
    if "result" in value:
        result = value["result"]
        if not isinstance(result, dict):
            raise ProtocolError("a result is not an object")
        return Response(id=_request_id(id_), result=result)
    error = value.get("error")
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message", "")
        if not isinstance(code, int) or isinstance(code, bool):
            raise ProtocolError("an error has no integer code")
        return ErrorResponse(
            id=None if id_ is None else _request_id(id_),
            code=code,
            message=message if isinstance(message, str) else "",
            data=error.get("data"),
        )
    raise ProtocolError("a message is neither a request, a notification, a result nor an error")


def _request_id(value: JsonValue) -> RequestId:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ProtocolError("a message has no valid id")
    return value
