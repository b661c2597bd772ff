"""Listing an MCP server's tools across pages, for both MCP sources."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amends_toolkit._errors import InvalidResponseError
from amends_toolkit._log import get_logger
from amends_toolkit.protocols.mcp._tools import (
    MAX_PAGES,
    ListedTool,
    RejectedTool,
    list_params,
    read_tools_page,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from amends_toolkit._json import JsonObject

__all__ = ("list_tools",)

_log = get_logger(__name__)


async def list_tools(
    source: str,
    send: Callable[[JsonObject], Awaitable[JsonObject]],
    *,
    check_marks: bool,
) -> tuple[dict[str, ListedTool], dict[str, str]]:
    """Every page of ``tools/list``: the tools kept, by name, and those left out with why.

    ``send`` sends the params of one ``tools/list`` and gives its result. A tool listed twice
    keeps its first listing; each tool left out is logged as ``mcp.tool_rejected``.

    Raises:
        InvalidResponseError: a cursor given twice, or more than ``MAX_PAGES`` pages.
    """
    listed: dict[str, ListedTool] = {}
    rejected: list[RejectedTool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = read_tools_page(await send(list_params(cursor)), check_marks=check_marks)
        for tool in page.tools:
            if tool.definition.name in listed:
                rejected.append(RejectedTool(name=tool.definition.name, reason="listed twice"))
            else:
                listed[tool.definition.name] = tool
        rejected.extend(page.rejected)
        cursor = page.next_cursor
        if cursor is None:
            break
        if cursor in seen:
            raise InvalidResponseError(
                source=source, message="tools/list gave a cursor it had given before"
            )
        seen.add(cursor)
    else:
        raise InvalidResponseError(
            source=source, message=f"tools/list gave more than {MAX_PAGES} pages"
        )
    for left_out in rejected:
        _log.warning("mcp.tool_rejected", source=source, tool=left_out.name, reason=left_out.reason)
    return listed, {r.name: r.reason for r in rejected if r.name not in listed}
