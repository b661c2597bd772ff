"""The model-facing toolkit: named tools, each an entry of a tool and the handler that runs it.

A :class:`Toolkit` is immutable and shared: its entries, their compiled validators and their
routes are built once and read by every session that runs it, so a session costs nothing more.

Whatever happens to a call is a result the model reads (:meth:`Toolkit.call`):

=====================================  ==================================================
what happened                          what the model reads (``code`` of the Failure JSON)
=====================================  ==================================================
the name is unknown (or blocked)       ``NotFoundError``, with the names it may have meant
the input is not an object, or does    ``InvalidInputError``, saying what to fix; the
not match the tool's schema            handler (the source) never sees the input
the tool needs approval, and nobody    ``ApprovalRequired``: the host runs it in a Session
was asked (or ``approve`` raised       (which asks a person), or says it approved the call
``ApprovalRequired``: none could be)
a person refused it (Session)          ``ApprovalDenied``
nobody decided in time (``approve``    ``ApprovalTimedOut``
raised ``ApprovalTimedOut``)
the session's timeout passed           ``UnavailableError``
the handler raised a ToolSourceError   that reason's Failure (``error.to_failure()``)
the handler raised a Failure           that Failure
the handler raised anything else       ``UnknownError`` ("the source failed"), logged
                                       with its traceback: a defect
the call was cancelled                 nothing: cancellation propagates
=====================================  ==================================================

:meth:`Toolkit.invoke` gives the same as a :class:`ToolResult`, which also holds the
``ToolSourceError`` behind a failure, so that a host can act on it (ask for a connection again
after an ``AuthenticationError``).

Every call takes one path, :func:`run_tool` (lookup, input check, approval, deadline, failure
mapping), whether a toolkit, a :class:`~amends_toolkit.Session` or a presentation makes it.

Presentations build toolkits of their own tools through the seam of :class:`ToolEntry` and
:meth:`Toolkit.from_entries`, and take tools of another toolkit with :meth:`Toolkit.entry`: an
entry runs the same in every toolkit that holds it.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import inspect
import math
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, TypeAlias, cast

import anyio
import attrs

from amends_toolkit import _tracing
from amends_toolkit._definitions import Annotations, ToolDefinition
from amends_toolkit._errors import (
    ApprovalRequired,
    Failure,
    NameClash,
    NoApproval,
    NotFoundError,
    ToolSourceError,
    UnknownError,
)
from amends_toolkit._json import JsonInput, JsonObject, JsonValue
from amends_toolkit._log import get_logger
from amends_toolkit.runtime._deadlines import timed_out
from amends_toolkit.runtime._source import ToolSource
from amends_toolkit.runtime._validation import InputValidator, validator_for

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = (
    "DENIED",
    "NEEDS_APPROVAL",
    "Approve",
    "Ask",
    "CallOptions",
    "NeedsApproval",
    "OnError",
    "SourceTools",
    "Tool",
    "ToolEntry",
    "ToolHandler",
    "ToolResult",
    "Toolkit",
    "asking",
    "run_tool",
    "source_toolkit",
    "untimed",
)

_log = get_logger(__name__)

ToolHandler: TypeAlias = Callable[[JsonObject], Awaitable[JsonValue]]
"""What runs a tool: an async function of the (already checked) input object that returns JSON.

It raises a :class:`~amends_toolkit.ToolSourceError` reason or a
:class:`~amends_toolkit.Failure` for a failure the model should read; anything else it raises is a
defect. Cancellation must propagate.
"""

NeedsApproval: TypeAlias = bool | Callable[[JsonObject], bool]
"""Whether a call needs a person's approval: always, never, or as a function of its input."""

Approve: TypeAlias = Callable[[str, JsonObject], Awaitable[bool] | bool]
"""The host's question to a person: may this tool run with this input? ``True`` or ``False``
is what a person decided; when no person decided, it raises a :class:`~amends_toolkit.NoApproval`
(``ApprovalRequired``: nobody could be asked; ``ApprovalTimedOut``: nobody decided in time)."""

OnError: TypeAlias = Callable[[str, ToolSourceError], Awaitable[None] | None]
"""The host's view of the error behind a failure, with the model-facing name of the tool."""

SEPARATOR: Final = "__"
"""What joins a source's name and its tool's in a model-facing name: ``<source>__<tool>``."""

Ask: TypeAlias = Callable[[str, JsonObject], Awaitable[bool]]
"""How a running call asks a person about another call it makes: ``True`` when approved."""

_ASKING: ContextVar[Ask | None] = ContextVar("amends_toolkit.asking", default=None)


def asking() -> Ask | None:
    """How the Session running the current call asks a person, or ``None`` outside a Session
    and in a source's own call (which makes no calls of the toolkit's; over an actor it runs in
    another task, which could not see it either).

    For a presentation's tool that makes calls of its own in the middle of its call (code mode
    with ``approval="ask"``): it asks through the same ``approve`` the Session was given, and the
    time the person takes does not count in the Session's ``timeout``.
    """
    return _ASKING.get()


@contextlib.contextmanager
def untimed(scope: anyio.CancelScope) -> Iterator[None]:
    """Stop ``scope``'s clock inside the block: waiting for a person is no call's time."""
    remaining = scope.deadline - anyio.current_time()
    scope.deadline = math.inf
    try:
        yield
    finally:
        scope.deadline = anyio.current_time() + remaining


DENIED = Failure(
    code="ApprovalDenied",
    message="A person did not approve this call; it did not run.",
    retryable=False,
)
"""What the model reads when the host's ``approve`` refuses a call."""

NEEDS_APPROVAL = Failure(
    code=ApprovalRequired.__name__,
    message=(
        "This tool needs a person's approval and nobody was asked, so it did not run: the host"
        " must run it in a Session, which asks."
    ),
    retryable=False,
)
"""What the model reads of a call that needs approval made where nobody is asked."""

_NOT_FOUND = NotFoundError(source="toolkit").to_failure()
_MAX_HINTS = 3


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
class ToolResult:
    """What one call gave: the JSON the model reads, and what lies behind a failure.

    Attributes:
        value: The JSON the model reads: the tool's answer, or a Failure's JSON.
        failure: The failure, when the call failed (``value`` is then ``failure.to_json()``).
        error: The ``ToolSourceError`` behind the failure, when the handler (the source) raised
            one; for a defect, the ``UnknownError`` the toolkit read it as, whose ``__cause__``
            is the defect. ``None`` for the toolkit's own refusals (unknown name, refused input,
            approval refused, which are the model's or the person's, not the source's).
    """

    value: JsonValue
    failure: Failure | None = None
    error: ToolSourceError | None = None

    @property
    def ok(self) -> bool:
        """Whether the call gave an answer and no failure."""
        return self.failure is None

    def unwrap(self) -> JsonValue:
        """The answer, or raise what failed: ``error`` when there is one, else ``failure``.

        A handler that runs a tool of another toolkit returns ``(await other.invoke(...)).unwrap()``
        so that the outer toolkit gives the same result and keeps the error behind it.
        """
        if self.error is not None:
            raise self.error
        if self.failure is not None:
            raise self.failure
        return self.value

    @classmethod
    def failed(cls, failure: Failure, error: ToolSourceError | None = None) -> ToolResult:
        """The result of a failed call."""
        return cls(value=failure.to_json(), failure=failure, error=error)


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


class Toolkit:
    """The tools a model is given, and the one way to run them.

    Immutable, and shared by every session that runs it. Build one with
    :func:`~amends_toolkit.assemble`, :func:`~amends_toolkit.source_toolkit`, a presentation, or
    :meth:`from_entries`.
    """

    __slots__ = ("_entries", "_hints", "_sources", "_tools")

    def __init__(
        self, entries: dict[str, ToolEntry | int], sources: SourceTools | None = None
    ) -> None:
        """Use :meth:`from_entries` or :func:`~amends_toolkit.assemble`; this trusts that names
        are the entries' own and distinct, and takes ``entries`` as its own (nobody else may hold
        it). A value may be the code of a tool of ``sources`` instead of its entry: the entry is
        made when first used, and then kept in its place."""
        self._hints: dict[str, list[str]] | None = None
        self._entries = entries
        self._sources = sources
        # Made when first read (a presentation, an adapter): a call needs only the entries.
        self._tools: Mapping[str, Tool] | None = None

    @classmethod
    def from_entries(cls, entries: Iterable[ToolEntry]) -> Toolkit:
        """A toolkit of these entries, in this order; an entry given twice is one tool.

        Raises:
            NameClash: two different entries have one name (every clash at once).
        """
        by_name: dict[str, ToolEntry | int] = {}
        clashes: dict[str, list[tuple[str, str]]] = {}
        for entry in entries:
            first = by_name.setdefault(entry.name, entry)
            if first is not entry:
                pairs = clashes.setdefault(entry.name, [_origin(cast("ToolEntry", first))])
                pairs.append(_origin(entry))
        if clashes:
            raise NameClash(clashes)
        return cls(by_name)

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
        entry = self._entries[name]
        return entry if not isinstance(entry, int) else self._made(name, entry)

    def _find(self, name: str) -> ToolEntry | None:
        entry = self._entries.get(name)
        return entry if not isinstance(entry, int) else self._made(name, entry)

    def _made(self, name: str, code: int) -> ToolEntry:
        assert self._sources is not None  # only an assembly keeps codes, and its sources
        entry = self._sources.entry(name, code)
        # Kept in the code's place (the same key keeps its order), with the validator it
        # compiles at its first call. Two threads making it at once make two equal entries.
        self._entries[name] = entry
        return entry

    def entries(self) -> Iterator[ToolEntry]:
        """Every entry, in catalog order."""
        if self._sources is None:  # no codes: every value is an entry
            return iter(cast("Iterable[ToolEntry]", self._entries.values()))
        return (self.entry(name) for name in list(self._entries))

    def source_tool(self, name: str) -> tuple[str, str]:
        """The ``(source name, tool name)`` a model-facing name reaches.

        Raises:
            KeyError: no tool has this name, or it reaches no source (a presentation's own tool).
        """
        entry = self._entries[name]
        if isinstance(entry, int):
            assert self._sources is not None
            return self._sources.route(entry)
        if entry.route is None:
            raise KeyError(f"{name!r} reaches no source")
        return entry.route

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


@attrs.frozen(kw_only=True)
class CallOptions:
    """How the one call path runs a call: who is asked, for how long, who hears of errors.

    Attributes:
        approve: Asked before a call that needs approval; ``None`` when nobody can be asked,
            which makes such a call an ``ApprovalRequired`` failure.
        timeout: Seconds the tool may run (approval not counted), or ``None``.
        on_error: Sees the ``ToolSourceError`` behind a failure before the result is given.
        asks_a_person: ``approve`` asks a person (a Session's), so a call that makes calls of
            its own (code mode's ``approval="ask"``) may ask through it too, see :func:`asking`;
            a host's ``approved=True`` approves only the call it names.
    """

    approve: Approve | None = None
    timeout: float | None = None
    on_error: OnError | None = None
    asks_a_person: bool = False
    _ask: Ask | None = attrs.field(init=False, eq=False, repr=False)
    """How a running call asks through ``approve`` when the call has no deadline: made once,
    not per call."""

    @_ask.default
    def _ask_default(self) -> Ask | None:
        if not self.asks_a_person or self.approve is None:
            return None
        return functools.partial(_approves, self.approve)

    def ask(self, deadline: anyio.CancelScope | None) -> Ask | None:
        """How a call under ``deadline`` asks a person, or ``None`` when nobody is asked."""
        if self._ask is None or deadline is None:
            return self._ask
        assert self.approve is not None  # _ask is made only with one
        return functools.partial(_asks_untimed, self.approve, deadline)


def _approved(name: str, input: JsonObject) -> bool:
    return True


_NOBODY_ASKED = CallOptions()
_HOST_APPROVED = CallOptions(approve=_approved)


def run_tool(
    toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions = _NOBODY_ASKED
) -> Coroutine[object, object, ToolResult]:
    """The one path of a call: lookup, input check, approval, deadline, failure mapping.

    ``toolkit.call``, a Session and the presentations all run calls through it; ``options``
    says what differs between them. With a tracer provider set by the host, the call is an
    ``execute_tool`` span (see :mod:`amends_toolkit._tracing`); without one, that costs one
    check. Not a coroutine itself: an untraced call in flight holds no frame more.

    Raises:
        TypeError: ``approve`` gave something other than ``True`` or ``False`` (the host's
            mistake, named with its fix).
    """
    tracer = _tracing.tracer()
    if tracer is None:
        return _run_tool(toolkit, name, given, options)
    return _traced_tool(tracer, toolkit, name, given, options)


async def _traced_tool(
    tracer: Tracer, toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions
) -> ToolResult:
    """:func:`_run_tool` in an ``execute_tool`` span: a tool's name only when the toolkit has
    it (a name a model made up is no span's name), and the failure's code as ``error.type``."""
    known = isinstance(name, str) and name in toolkit
    attributes: dict[str, str] = {"gen_ai.operation.name": "execute_tool"}
    if known:
        attributes["gen_ai.tool.name"] = name
    with _tracing.span(
        tracer, f"execute_tool {name}" if known else "execute_tool", attributes
    ) as span:
        token = _tracing.activated(tracer)
        try:
            result = await _run_tool(toolkit, name, given, options)
        finally:
            _tracing.deactivated(token)
        if result.failure is not None:
            _tracing.failed(span, result.failure.code)
        return result


async def _run_tool(
    toolkit: Toolkit, name: str, given: JsonInput, options: CallOptions
) -> ToolResult:
    approve, timeout = options.approve, options.timeout
    entry = toolkit._find(name)
    if entry is None:
        return not_found(toolkit.hints(name) if isinstance(name, str) else [])
    # The host's input as the check reads it: the same object, unchanged (the check refuses any
    # but a dict, as it refuses anything a model sends that is no JSON object).
    input = cast("JsonValue", given)
    problem = entry.check(input)
    if problem is not None:
        return refused(problem)
    assert isinstance(input, dict)  # check() refuses anything but an object
    if entry.tool.needs_approval is not False and entry.tool.requires_approval(input):
        if approve is None:
            _log.info("call.needs_approval", tool=name)
            return ToolResult.failed(NEEDS_APPROVAL)
        try:
            approved = await _approves(approve, name, input)
        except NoApproval as undecided:
            _log.info("call.undecided", tool=name, code=undecided.code)
            return ToolResult.failed(undecided.to_failure())
        if not approved:
            _log.info("call.denied", tool=name)
            return ToolResult.failed(DENIED)
    # One coroutine for the whole call: a call in flight holds every frame of its chain, and
    # with many calls at once the garbage collector walks them all at each young collection.
    # No deadline, no cancel scope: a call's own cancellation needs none.
    deadline = None if timeout is None else anyio.move_on_after(timeout)
    # Only a tool with a handler of its own asks through the call's Session (see asking()).
    ask = None if entry._handler is None else options.ask(deadline)
    token = None if ask is None else _ASKING.set(ask)
    try:
        if deadline is None:
            value = await entry.run(input)
        else:
            value = None
            with deadline:
                value = await entry.run(input)
    except Exception as error:  # noqa: BLE001 - every failure is a result (see _failed)
        result = _failed(entry, error)
    else:
        result = ToolResult(value=value)
    finally:
        if token is not None:
            _ASKING.reset(token)
    if deadline is not None and deadline.cancelled_caught:
        late = timed_out(entry.source_name, name, "Session timeout", timeout)
        result = ToolResult.failed(late.to_failure(), late)
    if result.error is not None and options.on_error is not None:
        seen = options.on_error(name, result.error)
        if inspect.isawaitable(seen):
            await seen
    return result


async def _approves(approve: Approve, name: str, input: JsonObject) -> bool:
    answer = approve(name, input)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, bool):
        raise TypeError(
            f"approve gave {answer!r} for {name}; it must give True (run the call) or False"
            " (refuse it), such as `return answer == 'yes'`"
        )
    return answer


async def _asks_untimed(
    approve: Approve, scope: anyio.CancelScope, name: str, input: JsonObject
) -> bool:
    with untimed(scope):
        return await _approves(approve, name, input)


def not_found(hints: Sequence[str] = ()) -> ToolResult:
    """The result of a name no tool of the toolkit has (or a blocked tool's), with the names
    the model may have meant."""
    if not hints:
        return ToolResult.failed(_NOT_FOUND)
    meant = " or ".join(hints)
    return ToolResult.failed(
        Failure(code=_NOT_FOUND.code, message=f"{_NOT_FOUND.message} Did you mean {meant}?")
    )


def refused(problem: str) -> ToolResult:
    """The result of an input the tool's schema refuses."""
    return ToolResult.failed(Failure(code="InvalidInputError", message=problem, retryable=False))


def _failed(entry: ToolEntry, error: Exception) -> ToolResult:
    """The result of an entry's run that raised ``error``: a ``ToolSourceError`` as its
    failure, a ``Failure`` as itself, anything else as a defect."""
    if isinstance(error, ToolSourceError):
        _log.info(
            "call.failed",
            tool=entry.name,
            source=error.source,
            reason=error.reason,
            retryable=error.retryable,
        )
        return ToolResult.failed(error.to_failure(), error)
    if isinstance(error, Failure):
        _log.info("call.failed", tool=entry.name, reason=error.code)
        return ToolResult.failed(error)
    # A defect: the host reads it in the log, the model reads "the source failed".
    _log.error("call.defect", tool=entry.name, source=entry.source_name, exc_info=error)
    unknown = UnknownError(source=entry.source_name)
    unknown.__cause__ = error
    return ToolResult.failed(unknown.to_failure(), unknown)


def _origin(entry: ToolEntry) -> tuple[str, str]:
    return entry.route if entry.route is not None else ("", entry.name)


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


def source_toolkit(source: ToolSource, definitions: Sequence[ToolDefinition]) -> Toolkit:
    """The toolkit of one source's definitions, unprefixed: each tool under its own name.

    Building contacts nothing: the source is reached only when a tool is called.

    Raises:
        NameClash: two definitions share a name.
    """
    return Toolkit.from_entries(
        source_entry(source, definition, name=definition.name) for definition in definitions
    )
