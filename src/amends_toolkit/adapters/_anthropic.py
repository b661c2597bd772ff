"""Anthropic: the toolkit's tools as Messages API tools, and a model's tool uses run and answered.

A result that holds media (:mod:`amends_toolkit._content`) is a ``tool_result`` of blocks: text,
an ``image`` for a JPEG, PNG, GIF or WebP image, a ``document`` for a PDF, and a line of text
in place of anything else (audio, other files), which the Messages API cannot carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from amends_toolkit._content import Media, content_parts
from amends_toolkit.adapters._calls import (
    PendingCall,
    ToolCaller,
    ToolCallLike,
    content_of,
    is_failure,
    read,
    run_all,
    text_field,
)
from amends_toolkit.adapters._schemas import model_schema

if TYPE_CHECKING:
    from collections.abc import Iterable

    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime import Toolkit

__all__ = ("anthropic_tools", "run_anthropic_tool_uses")

_IMAGES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def anthropic_tools(toolkit: Toolkit) -> list[JsonObject]:
    """The toolkit's tools as Messages API tools: ``{"name", "description", "input_schema"}``,
    as the ``anthropic`` SDK's ``ToolParam`` is: an object root, and property names the API
    accepts (a tool use's input is given back the source's names; see ``_schemas``)."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": model_schema(tool.input_schema),
        }
        for tool in toolkit.tools.values()
    ]


async def run_anthropic_tool_uses(
    caller: ToolCaller, content: Iterable[ToolCallLike]
) -> JsonObject:
    """Run a message's ``tool_use`` blocks and give the user message that answers them.

    Args:
        caller: A :class:`~amends_toolkit.Session` (or a bare :class:`~amends_toolkit.Toolkit`).
        content: ``message.content``: its ``tool_use`` blocks are run, other blocks skipped.

    Returns:
        ``{"role": "user", "content": [{"type": "tool_result", "tool_use_id", "content",
        "is_error"}, ...]}``, one block per tool use in order (the content is empty when there
        were none). Calls run concurrently; ``is_error`` is set for a failure. A result that is a
        string is sent as it is; MCP content blocks as text, image and document blocks (see the
        module); any other JSON as JSON text.

    Raises:
        ValueError: a tool use lacks its ``id`` or ``name``.
    """
    uses = [block for block in map(read, content) if block.get("type") == "tool_use"]
    ids = [text_field(use, "id", "tool use") for use in uses]
    pending: list[PendingCall] = []
    for use in uses:
        given: JsonValue = use.get("input", {})  # type: ignore[assignment]
        pending.append((text_field(use, "name", "tool use"), given))
    results = await run_all(caller, pending)
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": use_id,
                "content": _content(result),
                "is_error": is_failure(result),
            }
            for use_id, result in zip(ids, results, strict=True)
        ],
    }


def _content(value: JsonValue) -> JsonValue:
    parts = content_parts(value)
    if parts is None:
        return content_of(value)
    blocks: list[JsonValue] = []
    for part in parts:
        if isinstance(part, Media):
            block = _media(part)
            if block is not None:
                blocks.append(block)
                continue
            part = part.placeholder("the Messages API cannot carry it")
        # The API refuses an empty text block.
        if part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def _media(part: Media) -> JsonObject | None:
    source: JsonObject = {"type": "base64", "media_type": part.mime_type, "data": part.data}
    if part.kind == "image" and part.mime_type in _IMAGES:
        return {"type": "image", "source": source}
    if part.mime_type == "application/pdf":
        return {"type": "document", "source": source, "title": part.filename}
    return None
