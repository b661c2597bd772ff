"""``tools/list`` results as definitions: hints carried, marks read, invalid tools set apart.

Transport-independent. The HTTP source checks ``x-mcp-header`` marks in the stateless protocol
(``check_marks=True``); a session (and stdio) lists tools as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from amends_toolkit._definitions import Annotations, ToolDefinition, schema_problem
from amends_toolkit.protocols.mcp._headers import HeaderMark, InvalidMarks, read_marks
from amends_toolkit.protocols.mcp._jsonrpc import ProtocolError

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("MAX_PAGES", "ListedTool", "RejectedTool", "ToolsPage", "list_params", "read_tools_page")

MAX_PAGES = 100
"""How many pages of ``tools/list`` a source reads before it gives up on a server's cursors."""

_HINTS = (
    ("readOnlyHint", "read_only"),
    ("destructiveHint", "destructive"),
    ("idempotentHint", "idempotent"),
    ("openWorldHint", "open_world"),
)


@attrs.frozen(kw_only=True)
class ListedTool:
    """A tool as listed: its definition and the parameters it marks for headers."""

    definition: ToolDefinition
    marks: tuple[HeaderMark, ...] = ()


@attrs.frozen(kw_only=True)
class RejectedTool:
    """A tool left out of the listing, and why (for the warning the source logs)."""

    name: str
    reason: str


@attrs.frozen(kw_only=True)
class ToolsPage:
    """One page of ``tools/list``; ``next_cursor`` is ``None`` at the end."""

    tools: tuple[ListedTool, ...]
    rejected: tuple[RejectedTool, ...]
    next_cursor: str | None


def list_params(cursor: str | None) -> JsonObject:
    """The params of a ``tools/list`` request (an empty string is a cursor too)."""
    return {} if cursor is None else {"cursor": cursor}


def read_tools_page(result: JsonObject, *, check_marks: bool) -> ToolsPage:
    """Read a ``tools/list`` result.

    A tool without a name or an object input schema, a tool that only runs as a task
    (``execution.taskSupport: "required"``, which no call of the source asks for), and (with
    ``check_marks``) a tool whose ``x-mcp-header`` marks the protocol does not allow, is rejected
    rather than failing the page.

    Raises:
        ProtocolError: the result has no ``tools`` list, or a cursor that is not a string.
    """
    tools = result.get("tools")
    if not isinstance(tools, list):
        raise ProtocolError("a tools/list result has no tools list")
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise ProtocolError("a tools/list result has a nextCursor that is not a string")
    listed: list[ListedTool] = []
    rejected: list[RejectedTool] = []
    for tool in tools:
        outcome = _read_tool(tool, check_marks=check_marks)
        if isinstance(outcome, ListedTool):
            listed.append(outcome)
        else:
            rejected.append(outcome)
    return ToolsPage(tools=tuple(listed), rejected=tuple(rejected), next_cursor=cursor)


def _read_tool(tool: JsonValue, *, check_marks: bool) -> ListedTool | RejectedTool:
    if not isinstance(tool, dict) or not isinstance(name := tool.get("name"), str) or not name:
        return RejectedTool(name="?", reason="a listed tool has no name")
    schema = tool.get("inputSchema")
    problem = schema_problem(schema)
    if problem is not None or not isinstance(schema, dict):
        return RejectedTool(name=name, reason=f"its inputSchema {problem}")
    execution = tool.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        # The source never augments a call with a task, so the server refuses every call.
        return RejectedTool(name=name, reason="it can only run as a task (taskSupport: required)")
    marks: tuple[HeaderMark, ...] = ()
    if check_marks:
        try:
            marks = read_marks(schema)
        except InvalidMarks as error:
            return RejectedTool(name=name, reason=str(error))
    description = tool.get("description")
    definition = ToolDefinition(
        name=name,
        description=description if isinstance(description, str) else "",
        input_schema=schema,
        annotations=_annotations(tool),
    )
    return ListedTool(definition=definition, marks=marks)


def _annotations(tool: JsonObject) -> Annotations:
    hints = tool.get("annotations")
    if not isinstance(hints, dict):
        hints = {}
    # The spec's display order: the tool's own title, then the annotations' title.
    title = next(
        (t for t in (tool.get("title"), hints.get("title")) if isinstance(t, str)),
        None,
    )
    flags: dict[str, bool] = {
        field: value for key, field in _HINTS if isinstance(value := hints.get(key), bool)
    }
    return Annotations(title=title, **flags)
