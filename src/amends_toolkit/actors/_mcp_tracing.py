"""The MCP client span of a traced call's request, as the GenAI conventions' MCP page names it
(see :mod:`amends_toolkit._tracing`): ``{mcp.method.name} {gen_ai.tool.name}``, of kind
``CLIENT``, its context sent to the server in the request's ``params._meta`` (``traceparent``
and ``tracestate``, as SEP-414 and the conventions say).

It holds the method, the tool's name, the JSON-RPC request id, the protocol version and the
session id, the transport, and what failed as ``error.type``: the JSON-RPC error code, or
``tool_error`` for a result with ``isError``, or a failure's reason. Never the arguments, the
result, or the server's words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from amends_toolkit._tracing import error_code, failed, injected, span
from amends_toolkit.protocols.mcp._jsonrpc import ErrorResponse

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from opentelemetry.trace import Tracer

    from amends_toolkit._json import JsonObject
    from amends_toolkit.protocols.mcp._jsonrpc import Response

__all__ = ("traced_request",)


async def traced_request(
    tracer: Tracer,
    method: str,
    name: str | None,
    params: JsonObject,
    send: Callable[[JsonObject], Awaitable[Response | ErrorResponse]],
    *,
    transport: Literal["tcp", "pipe"],
    session: Callable[[], tuple[str | None, str | None]],
) -> Response | ErrorResponse:
    """``send(params)`` in an MCP client span, ``params._meta`` holding the span's context.

    ``session`` tells, once the request is over, the protocol version and the session id
    (either ``None`` when not known).
    """
    attributes: dict[str, str] = {"mcp.method.name": method, "network.transport": transport}
    if transport == "tcp":
        attributes["network.protocol.name"] = "http"
    if method == "tools/call" and name is not None:
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = name
    with span(
        tracer, method if name is None else f"{method} {name}", attributes, client=True
    ) as made:
        carrier: dict[str, str] = {}
        injected(carrier)
        meta = params.get("_meta")
        traced_meta: JsonObject = {**meta} if isinstance(meta, dict) else {}
        traced_meta.update(carrier)
        sent: JsonObject = {**params, "_meta": traced_meta}
        try:
            reply = await send(sent)
        except Exception as error:
            failed(made, error_code(error))
            raise
        finally:
            version, session_id = session()
            if version is not None:
                made.set_attribute("mcp.protocol.version", version)
            if session_id is not None:
                made.set_attribute("mcp.session.id", session_id)
        if reply.id is not None:
            made.set_attribute("jsonrpc.request.id", str(reply.id))
        if isinstance(reply, ErrorResponse):
            made.set_attribute("rpc.response.status_code", str(reply.code))
            failed(made, str(reply.code))
        elif method == "tools/call" and reply.result.get("isError") is True:
            failed(made, "tool_error")
        return reply
