"""``tools/call`` results read as what the model gets, a failure, or a request for input.

Transport-independent. A result is its ``structuredContent`` when the key is there and not
``null`` and its content holds no media, else its ``content`` blocks as the server wrote them
(so an image, a sound or an embedded resource reaches the model APIs as such, see
:mod:`amends_toolkit._content`); ``isError`` is a failed call with
the tool's text; ``resultType: "input_required"`` (2026-07-28) asks for input first.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs

from amends_toolkit._content import holds_media
from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit._peer import cut
from amends_toolkit._progress import OnProgress, Progress, report
from amends_toolkit.protocols.mcp._jsonrpc import Notification, ProtocolError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = (
    "MAX_RESENDS",
    "Complete",
    "InputRequired",
    "Outcome",
    "ToolFailed",
    "call_params",
    "progress_relay",
    "read_call_result",
    "read_progress",
    "resend_delay",
)

MAX_RESENDS: Final = 10
"""How many times a call that only asks to be sent again (``requestState`` alone) is resent."""

_NO_TEXT: Final = "The tool reported a failure."
MAX_PROGRESS_MESSAGE: Final = 1000
"""How much of a progress notification's ``message`` is passed on (characters)."""


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
    tool: str,
    arguments: JsonObject,
    *,
    request_state: str | None = None,
    progress_token: int | None = None,
) -> JsonObject:
    """The params of a ``tools/call`` request (``requestState`` echoed byte for byte on a resend).

    A ``progress_token`` asks the server for ``notifications/progress`` bearing it.
    """
    params: JsonObject = {"name": tool, "arguments": arguments}
    if request_state is not None:
        params["requestState"] = request_state
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return params


def read_progress(message: Notification, token: int) -> Progress | None:
    """The progress a notification reports for the request of ``token``; ``None`` for any other
    notification, another token, or a progress that is no finite number."""
    if message.method != "notifications/progress":
        return None
    params = message.params
    given = params.get("progressToken")
    if isinstance(given, bool) or given != token:
        return None
    progress, total, text = params.get("progress"), params.get("total"), params.get("message")
    if not _finite(progress):
        return None
    assert isinstance(progress, int | float)  # _finite
    return Progress(
        progress=float(progress),
        total=float(total) if _finite(total) else None,  # type: ignore[arg-type]
        message=text[:MAX_PROGRESS_MESSAGE] if isinstance(text, str) else None,
    )


def progress_relay(
    on_progress: OnProgress, token: int
) -> Callable[[Notification], Awaitable[None]]:
    """What reads the notifications sent before a call's answer: its progress goes on to
    ``on_progress``; any other notification is let go."""

    async def relay(message: Notification) -> None:
        progress = read_progress(message, token)
        if progress is not None:
            await report(on_progress, progress)

    return relay


def _finite(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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
    if structured is not None and not holds_media(content):
        return Complete(value=structured)
    return Complete(value=content)
