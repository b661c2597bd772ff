"""Search: a toolkit presented to a model as two tools, ``tool_search`` and ``tool_call``.

The model is shown the same two tools however many the presented toolkit has, and reads of the
others only what it searched for. ``tool_search`` ranks with a :class:`ToolRanker`: the
built-in :class:`SearchIndex` (built once here) unless the host brings another. ``tool_call``
runs a tool of the presented toolkit exactly as a direct call would. A blocked tool is not in
an assembled toolkit, so it can be neither found nor called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread

from amends_toolkit.presentations._index import SearchIndex, ToolRanker
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("CALL", "MAX_LIMIT", "MAX_QUERY_LENGTH", "SEARCH", "tool_search")

SEARCH = "tool_search"
"""The name of the tool that finds tools."""
CALL = "tool_call"
"""The name of the tool that runs a tool found."""
MAX_LIMIT = 20
"""The most tools one search may return."""
MAX_QUERY_LENGTH = 300
"""The most characters a query may have (its schema's ``maxLength``): a search's work grows with
its words, and a few say what a tool should do. Over 40,000 tools a search of the longest takes
a worker thread a fraction of a second."""


def tool_search(toolkit: Toolkit, *, limit: int = 5, ranker: ToolRanker | None = None) -> Toolkit:
    """Present ``toolkit`` to a model as two tools, ``tool_search`` and ``tool_call``.

    ``tool_search({query, limit?})`` answers ``{"tools": [{name, description, inputSchema}],
    "matched": n, "available": n}``: the best matches for the words of ``query`` (see
    :mod:`amends_toolkit.presentations._index` for how they rank), how many tools matched at all
    and how many there are. A query with no words lists the tools in order. A search gives
    ``limit`` tools unless it asks for another number, up to twenty; its schema refuses more, and
    a query longer than :data:`MAX_QUERY_LENGTH` characters (an ``InvalidInputError`` failure).

    ``tool_call({name, input})`` runs the tool of that name as the presented toolkit runs it: the
    input is checked against the tool's schema, the handler runs, and a failure is a result the
    model reads; a name that is no tool is a ``NotFoundError`` failure. A tool that needs
    approval needs it through ``tool_call`` too: ``tool_call``'s ``needs_approval`` is a function
    of its input that asks the named tool's own ``needs_approval`` about the input the model
    gave, so a session asks about the call as about any other. Cancelling a ``tool_call``
    cancels the call it runs, and is never read as a failure.

    Neither tool is meant for a model API's strict schema mode (``limit`` is optional and
    ``input`` has the shape of the tool named). The built-in index is built here, once;
    building reads only the tools' names, descriptions, input schemas, annotations and keywords
    and contacts nothing. A found tool is shown by its name, description and input schema only:
    its keywords and annotations help find it and are never shown.

    A search ranks in a worker thread, never on the event loop (over a large catalog the
    built-in index may take a tenth of a second, a model's encoder milliseconds), and waits for
    it even when cancelled. A host's ``ranker`` ranks the tools by their positions in
    ``list(toolkit.tools.values())`` and must be safe to call from several threads at once; a
    position that is not one of the tools' fails the search.

    Args:
        toolkit: The toolkit to present, usually an assembly's.
        limit: How many tools a search gives when the call does not say, 1 to 20.
        ranker: What ranks the tools for a query, built over the toolkit's tools in order;
            the built-in :class:`SearchIndex` when ``None``.

    Raises:
        ValueError: ``limit`` is not a whole number from 1 to 20.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
    tools = tuple(toolkit.tools.values())
    rank = (SearchIndex(tools) if ranker is None else ranker).rank

    async def search(input: JsonObject) -> JsonValue:
        query = input["query"]
        wanted = input.get("limit", limit)
        # the schema holds them so
        assert isinstance(query, str)
        assert isinstance(wanted, int)
        positions: Sequence[int]
        positions, matched = await anyio.to_thread.run_sync(rank, query, wanted)
        found: list[JsonValue] = []
        for position in positions[:wanted]:
            if not 0 <= position < len(tools):
                raise ValueError(f"the ranker gave position {position}, not one of {len(tools)}")
            found.append(_card(tools[position]))
        return {"tools": found, "matched": matched, "available": len(tools)}

    async def call(input: JsonObject) -> JsonValue:
        name, inner = input["name"], input["input"]
        assert isinstance(name, str)  # the schema holds it so
        # unwrap() raises what failed, so this call gives the same failure, and a session's
        # on_error still sees the source's error behind it. tool_call's own needs_approval is
        # the named tool's, so the path that ran tool_call has asked (or refused) already.
        return (await toolkit.invoke(name, inner, approved=True)).unwrap()

    return Toolkit.from_entries(
        [
            ToolEntry(tool=_search_tool(limit), handler=search),
            ToolEntry(tool=_call_tool(_approval(toolkit)), handler=call),
        ]
    )


def _card(tool: Tool) -> JsonValue:
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def _approval(toolkit: Toolkit) -> bool | Callable[[JsonObject], bool]:
    """``tool_call``'s ``needs_approval``: the named tool's own, asked about its input."""
    if not any(tool.needs_approval for tool in toolkit.tools.values()):
        return False

    def needs_approval(input: JsonObject) -> bool:
        name, inner = input.get("name"), input.get("input")
        if not isinstance(name, str) or name not in toolkit:
            return False  # the call is a NotFoundError failure: nothing runs
        entry = toolkit.entry(name)
        if entry.check(inner) is not None:
            return False  # the call is an InvalidInputError failure: nothing runs
        assert isinstance(inner, dict)  # check() refuses anything but an object
        return entry.tool.requires_approval(inner)

    return needs_approval


def _search_tool(limit: int) -> Tool:
    return Tool(
        name=SEARCH,
        description=(
            "Find the tools that can do a task. Say in a few words what the tool should do"
            ' (for example "list the songs in a playlist"); the answer gives the best matches,'
            " each with its name, description and inputSchema, with how many tools matched"
            " (matched) and how many there are (available). It matches words, not meaning:"
            " when nothing fits, search again with other words. An empty query lists the"
            " tools in order. Run a tool found with tool_call."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": MAX_QUERY_LENGTH,
                    "description": "What the tool should do, in a few words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": f"How many tools to give at most ({limit} unless given).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )


def _call_tool(needs_approval: bool | Callable[[JsonObject], bool]) -> Tool:
    return Tool(
        name=CALL,
        description=(
            "Run a tool found with tool_search: give its exact name, and as input an object"
            " that matches its inputSchema. The answer is the tool's result."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the tool to run."},
                "input": {
                    "type": "object",
                    "description": "The tool's input, matching its inputSchema.",
                },
            },
            "required": ["name", "input"],
            "additionalProperties": False,
        },
        needs_approval=needs_approval,
    )
