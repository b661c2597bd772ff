"""``tools/call`` results read as what the model gets, a failure, or a request for input.

Transport-independent. A result is its ``structuredContent`` when the key is there and not
``null``, else its ``content`` blocks as the server wrote them; ``isError`` is a failed call with
the tool's text; ``resultType: "input_required"`` (2026-07-28) asks for input first.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import attrs

from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit._peer import cut
from amends_toolkit.protocols.mcp._jsonrpc import ProtocolError

__all__ = (
    "MAX_RESENDS",
    "Complete",
    "InputRequired",
    "Outcome",
    "ToolFailed",
    "call_params",
    "read_call_result",
    "resend_delay",
)

MAX_RESENDS: Final = 10
"""How many times a call that only asks to be sent again (``requestState`` alone) is resent."""

_NO_TEXT: Final = "The tool reported a failure."


@attrs.frozen(kw_only=True)
class Complete:
    """The tool's answer: the JSON the model reads."""

    value: JsonValue


@attrs.frozen(kw_only=True)
class ToolFailed:
    """The tool ran and said it failed (``isError``), in its own words (at most 500 characters)."""

    text: str


@attrs.frozen(kw_only=True)
class InputRequired:
    """The server asks for something before it answers (2026-07-28 ``input_required``).

    ``asks_input`` is whether it asks for input (elicitation, sampling, roots); a result that
    only carries ``request_state`` asks to be sent again with it.
    """

    asks_input: bool
    request_state: str | None


Outcome: TypeAlias = Complete | ToolFailed | InputRequired


def call_params(
    tool: str, arguments: JsonObject, *, request_state: str | None = None
) -> JsonObject:
    """The params of a ``tools/call`` request (``requestState`` echoed byte for byte on a resend)."""
    params: JsonObject = {"name": tool, "arguments": arguments}
    if request_state is not None:
        params["requestState"] = request_state
    return params


def resend_delay(attempt: int) -> float:
    """Seconds to wait before resend ``attempt`` (0-based): 50 ms doubling, at most 250 ms."""
    return float(min(0.05 * 2.0**attempt, 0.25))


def read_call_result(result: JsonObject) -> Outcome:
    """Read a ``tools/call`` result.

    Raises:
        ProtocolError: an unknown ``resultType`` (the spec says it is invalid), or no content.
    """
    kind = result.get("resultType", "complete")
    if kind == "input_required":
        state = result.get("requestState")
        requests = result.get("inputRequests")
        return InputRequired(
            asks_input=bool(requests),
            request_state=state if isinstance(state, str) else None,
        )
    if kind != "complete":
        raise ProtocolError(f"a tools/call result has the unknown resultType {kind!r}")
    content = result.get("content", [])
    if not isinstance(content, list):
        raise ProtocolError("a tools/call result has content that is not a list")
    if result.get("isError") is True:
        texts = [
            text
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(text := block.get("text"), str)
        ]
        return ToolFailed(text=cut("\n".join(texts)) or _NO_TEXT)
    structured = result.get("structuredContent")
    if structured is not None:
        return Complete(value=structured)
    return Complete(value=content)
