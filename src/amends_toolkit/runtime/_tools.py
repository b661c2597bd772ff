"""A toolkit's tools: each a :class:`Tool` and the :class:`ToolEntry` that runs it, and the
lazy mapping of a toolkit's entries by name (:class:`ToolEntries`).

Presentations build toolkits of their own tools through the seam of :class:`ToolEntry` and
:meth:`~amends_toolkit.Toolkit.from_entries`, and take tools of another toolkit with
:meth:`~amends_toolkit.Toolkit.entry`: an entry runs the same in every toolkit that holds it.
"""

from __future__ import annotations

import bisect
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TypeAlias

import attrs

from amends_toolkit._definitions import Annotations, ToolDefinition
from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit.runtime._source import ToolSource
from amends_toolkit.runtime._validation import InputValidator, validator_for

__all__ = (
    "NeedsApproval",
    "SourceTools",
    "Tool",
    "ToolEntries",
    "ToolEntry",
    "ToolHandler",
    "source_entry",
)

ToolHandler: TypeAlias = Callable[[JsonObject], Awaitable[JsonValue]]
"""What runs a tool: an async function of the (already checked) input object that returns JSON.

It raises a :class:`~amends_toolkit.ToolSourceError` reason or a
:class:`~amends_toolkit.Failure` for a failure the model should read; anything else it raises is a
defect. Cancellation must propagate.
"""

NeedsApproval: TypeAlias = bool | Callable[[JsonObject], bool]
"""Whether a call needs a person's approval: always, never, or as a function of its input."""


@attrs.frozen(kw_only=True)
class Tool:
    """A tool as a model is given it.

    Attributes:
        name: The model-facing name, unique in its toolkit.
        description: What the tool does, for the model.
        input_schema: The JSON Schema (object root) of its input.
        needs_approval: ``True`` when a person must approve each call (a Session asks;
            ``toolkit.call`` refuses it unless the host says it approved), or a function of the
            (checked) input that says so per call.
        annotations: The hints its source gave (its definition's), which tool search reads.
        keywords: Texts tool search may find it by, never shown to the model (its
            definition's).
    """

    name: str
    description: str
    input_schema: JsonObject = attrs.field(hash=False)
    needs_approval: NeedsApproval = False
    annotations: Annotations = attrs.field(default=Annotations())
    keywords: tuple[str, ...] = ()

    def requires_approval(self, input: JsonObject) -> bool:
        """Whether a call with this (checked) input needs a person's approval."""
        if callable(self.needs_approval):
            return bool(self.needs_approval(input))
        return self.needs_approval


@attrs.frozen(kw_only=True)
class ToolEntry:
    """One tool of a toolkit and what runs it: the seam presentations build toolkits through.

    Attributes:
        tool: The tool as the model is given it.
        handler: Runs the tool with an input already checked against ``tool.input_schema``.
        route: ``(source name, tool name)`` when the tool reaches a source's tool, else ``None``
            (a presentation's own tool).
        source: The source a source's tool calls, by the tool name its ``route`` gives, instead
            of a ``handler`` (so that an assembly holds no handler object per tool).

    An entry taken from one toolkit (:meth:`Toolkit.entry`) and put in another
    (:meth:`Toolkit.from_entries`) runs as it did, and shares its compiled validator (which
    :func:`~amends_toolkit.runtime.validator_for` also shares between equal schemas).
    """

    tool: Tool
    _handler: ToolHandler | None = attrs.field(default=None, eq=False, alias="handler")
    route: tuple[str, str] | None = None
    _source: ToolSource | None = attrs.field(default=None, eq=False, repr=False, alias="source")
    # A cache, compiled at the first call and then read by every session: not part of the value.
    _validator: InputValidator | None = attrs.field(init=False, default=None, eq=False, repr=False)

    @property
    def name(self) -> str:
        """The model-facing name."""
        return self.tool.name

    @property
    def handler(self) -> ToolHandler:
        """What runs the tool with a checked input (for a source's tool, its source's call)."""
        if self._handler is not None:
            return self._handler
        return self.run

    @property
    def source_name(self) -> str:
        """The name of the source it reaches, or its own for a presentation's tool (for logs
        and errors)."""
        return self.route[0] if self.route is not None else self.tool.name

    def run(self, input: JsonObject) -> Awaitable[JsonValue]:
        """Run the tool with an input already checked (the handler, or the source's call)."""
        if self._handler is not None:
            return self._handler(input)
        if self._source is None or self.route is None:
            raise TypeError(f"the entry of {self.tool.name!r} has no handler, nor a routed source")
        return self._source.call(self.route[1], input)

    def check(self, input: JsonValue) -> str | None:
        """``None`` when the input may go to the handler, else what is wrong, for the model."""
        validator = self._validator
        if validator is None:
            validator = validator_for(self.tool.input_schema, tool=self.tool.name)
            object.__setattr__(self, "_validator", validator)
        return validator.check(input)

    def renamed(self, name: str) -> ToolEntry:
        """The same tool under another model-facing name, running as this one does."""
        return ToolEntry(
            tool=attrs.evolve(self.tool, name=name),
            handler=self._handler,
            route=self.route,
            source=self._source,
        )


@attrs.frozen(kw_only=True)
class SourceTools:
    """The sources of an assembled toolkit and their definitions, in assembly order: what its
    entries are made from when first used.

    An assembled toolkit keeps, per tool, only its name and a code (an int): the tool's position
    over every member's definitions, doubled, plus one when it needs approval. Strings and ints
    are nothing the cyclic collector tracks, nor is a dict of them, so assembling costs the
    collector nothing per tool however many there are.

    Attributes:
        sources: Each member's source.
        source_names: Each source's name, read once at assembly.
        definitions: Each member's definitions.
        starts: The position of each member's first definition.
    """

    sources: tuple[ToolSource, ...]
    source_names: tuple[str, ...]
    definitions: tuple[Sequence[ToolDefinition], ...]
    starts: tuple[int, ...]

    def route(self, code: int) -> tuple[str, str]:
        """The ``(source name, tool name)`` of a tool's code."""
        member, definition = self._locate(code >> 1)
        return self.source_names[member], definition.name

    def entry(self, name: str, code: int) -> ToolEntry:
        """The entry of a tool's code under its model-facing name."""
        member, definition = self._locate(code >> 1)
        return source_entry(
            self.sources[member], definition, name=name, needs_approval=bool(code & 1)
        )

    def _locate(self, position: int) -> tuple[int, ToolDefinition]:
        member = bisect.bisect_right(self.starts, position) - 1
        return member, self.definitions[member][position - self.starts[member]]


class ToolEntries(Mapping[str, ToolEntry]):
    """A toolkit's entries by model-facing name, in catalog order: each made when first read.

    Built from entries (:meth:`~amends_toolkit.Toolkit.from_entries`), it holds them. Built by
    an assembly, it holds per tool only its name and its code in ``sources`` (see
    :class:`SourceTools`: nothing the collector tracks), and makes a tool's entry the first time
    it is read, then keeps it. Two threads making one at once make two equal entries.
    """

    __slots__ = ("_codes", "_made", "_sources")

    def __init__(
        self,
        entries: dict[str, ToolEntry],
        codes: dict[str, int] | None = None,
        sources: SourceTools | None = None,
    ) -> None:
        """Takes ``entries`` and ``codes`` as its own (nobody else may hold them); ``codes``
        (with their ``sources``) are the tools, when given, and ``entries`` those made so far."""
        self._made = entries
        self._codes = codes
        self._sources = sources

    def find(self, name: str) -> ToolEntry | None:
        """The entry of a name, or ``None``: the one lookup of the call path."""
        entry = self._made.get(name)
        if entry is None and self._codes is not None:
            code = self._codes.get(name)
            if code is not None:
                assert self._sources is not None  # codes come with their sources
                entry = self._made[name] = self._sources.entry(name, code)
        return entry

    def route(self, name: str) -> tuple[str, str] | None:
        """The ``(source name, tool name)`` a name reaches, without making its entry.

        Raises:
            KeyError: no tool has this name.
        """
        if self._codes is not None:
            assert self._sources is not None
            return self._sources.route(self._codes[name])
        return self._made[name].route

    def __getitem__(self, name: str) -> ToolEntry:
        entry = self.find(name)
        if entry is None:
            raise KeyError(name)
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes if self._codes is not None else self._made)

    def __len__(self) -> int:
        return len(self._codes if self._codes is not None else self._made)

    def __contains__(self, name: object) -> bool:
        return name in (self._codes if self._codes is not None else self._made)


def source_entry(
    source: ToolSource, definition: ToolDefinition, *, name: str, needs_approval: bool = False
) -> ToolEntry:
    """The entry of a source's tool under a model-facing name."""
    return ToolEntry(
        tool=Tool(
            name=name,
            description=definition.description,
            input_schema=definition.input_schema,
            needs_approval=needs_approval,
            annotations=definition.annotations,
            keywords=definition.keywords,
        ),
        route=(source.name, definition.name),
        source=source,
    )
