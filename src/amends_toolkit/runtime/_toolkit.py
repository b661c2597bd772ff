"""The model-facing toolkit: named tools, each an entry of a tool and the handler that runs it.

A :class:`Toolkit` is immutable and shared: its entries, their compiled validators and their
routes are built once and read by every session that runs it, so a session costs nothing more.
What a call gives the model is said in :mod:`amends_toolkit.runtime._call`, the one call path;
what a toolkit holds, in :mod:`amends_toolkit.runtime._tools`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from amends_toolkit._errors import NameClash
from amends_toolkit.runtime._call import (
    _HOST_APPROVED,
    _NOBODY_ASKED,
    ToolResult,
    run_tool,
)
from amends_toolkit.runtime._tools import (
    Tool,
    ToolEntries,
    ToolEntry,
    source_entry,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonInput, JsonValue
    from amends_toolkit.runtime._source import ToolSource

__all__ = ("SEPARATOR", "Toolkit", "source_toolkit")

SEPARATOR: Final = "__"
"""What joins a source's name and its tool's in a model-facing name: ``<source>__<tool>``."""

_MAX_HINTS = 3


class Toolkit:
    """The tools a model is given, and the one way to run them.

    Immutable, and shared by every session that runs it. Build one with
    :func:`~amends_toolkit.assemble`, :func:`~amends_toolkit.source_toolkit`, a presentation, or
    :meth:`from_entries`.
    """

    __slots__ = ("_entries", "_hints", "_tools")

    def __init__(self, entries: ToolEntries) -> None:
        """Use :meth:`from_entries` or :func:`~amends_toolkit.assemble`; this trusts that names
        are the entries' own and distinct, and takes ``entries`` as its own (nobody else may hold
        it)."""
        self._hints: dict[str, list[str]] | None = None
        self._entries = entries
        # Made when first read (a presentation, an adapter): a call needs only the entries.
        self._tools: Mapping[str, Tool] | None = None

    @classmethod
    def from_entries(cls, entries: Iterable[ToolEntry]) -> Toolkit:
        """A toolkit of these entries, in this order; an entry given twice is one tool.

        Raises:
            NameClash: two different entries have one name (every clash at once).
        """
        by_name: dict[str, ToolEntry] = {}
        clashes: dict[str, list[tuple[str, str]]] = {}
        for entry in entries:
            first = by_name.setdefault(entry.name, entry)
            if first is not entry:
                clashes.setdefault(entry.name, [_origin(first)]).append(_origin(entry))
        if clashes:
            raise NameClash(clashes)
        return cls(ToolEntries(by_name))

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Each model-facing name's tool, in catalog order (read-only)."""
        if self._tools is None:
            self._tools = MappingProxyType({entry.name: entry.tool for entry in self.entries()})
        return self._tools

    def entry(self, name: str) -> ToolEntry:
        """The entry of a tool, to put in another toolkit.

        Raises:
            KeyError: no tool has this name.
        """
        return self._entries[name]

    def entries(self) -> Iterator[ToolEntry]:
        """Every entry, in catalog order."""
        return iter(self._entries.values())

    def source_tool(self, name: str) -> tuple[str, str]:
        """The ``(source name, tool name)`` a model-facing name reaches.

        Raises:
            KeyError: no tool has this name, or it reaches no source (a presentation's own tool).
        """
        route = self._entries.route(name)
        if route is None:
            raise KeyError(f"{name!r} reaches no source")
        return route

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"<Toolkit of {len(self._entries)} tools>"

    def hints(self, name: str) -> list[str]:
        """The tools a name that is no tool's may have meant: the same name with its source's
        prefix (``list_tasks`` for ``tasks__list_tasks``), or written in another case."""
        if self._hints is None:
            hints: dict[str, list[str]] = {}
            for tool in self._entries:
                keys = {tool.lower(), tool.partition(SEPARATOR)[2].lower()}
                for key in keys - {""}:
                    hints.setdefault(key, []).append(tool)
            self._hints = hints
        return self._hints.get(name.lower(), [])[:_MAX_HINTS]

    async def call(self, name: str, input: JsonInput, *, approved: bool = False) -> JsonValue:
        """Run a tool and give the JSON the model reads; never raises for a failure.

        The input must be an object that matches the tool's schema, or the source never sees it.
        An unknown name reads as a ``NotFoundError`` failure, a refused input as an
        ``InvalidInputError`` failure, a ``ToolSourceError`` as its failure, and any other
        exception, a defect, is logged with its traceback and read as an ``UnknownError``.
        Nobody is asked for approval here: a tool that needs it is an ``ApprovalRequired``
        failure, unless the host says it approved this call (``approved=True``); a
        :class:`~amends_toolkit.Session` asks a person. Cancellation propagates: a cancelled
        call gives no result.
        """
        return (await self.invoke(name, input, approved=approved)).value

    async def invoke(self, name: str, input: JsonInput, *, approved: bool = False) -> ToolResult:
        """Run a tool as :meth:`call` does, and give the result with the error behind a failure."""
        return await run_tool(self, name, input, _HOST_APPROVED if approved else _NOBODY_ASKED)


def _origin(entry: ToolEntry) -> tuple[str, str]:
    return entry.route if entry.route is not None else ("", entry.name)


def source_toolkit(source: ToolSource, definitions: Sequence[ToolDefinition]) -> Toolkit:
    """The toolkit of one source's definitions, unprefixed: each tool under its own name.

    Building contacts nothing: the source is reached only when a tool is called.

    Raises:
        NameClash: two definitions share a name.
    """
    return Toolkit.from_entries(
        source_entry(source, definition, name=definition.name) for definition in definitions
    )
