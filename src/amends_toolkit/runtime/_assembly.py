"""Assembly: the one toolkit of a turn, from the sources a host has and its policy.

A model knows a tool as ``<source>__<tool>``, in the characters model APIs accept
(``[A-Za-z0-9_-]``; any other becomes ``_``). A name longer than ``max_name_length`` is cut and
ends with ``_`` and a fingerprint of the whole name (10 characters of its SHA-256 in base32), so
long names that differ only after the cut stay apart, and a name is the same in every process.
Building contacts no source and takes time linear in the number of tools.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NoReturn

import attrs

from amends_toolkit._definitions import ToolDefinition
from amends_toolkit._errors import NameClash
from amends_toolkit.runtime._source import ToolSource
from amends_toolkit.runtime._toolkit import SEPARATOR, Toolkit
from amends_toolkit.runtime._tools import SourceTools, ToolEntries

if TYPE_CHECKING:
    from amends_toolkit._definitions import Decision

__all__ = ("MIN_NAME_LENGTH", "Member", "assemble", "tool_name")

MIN_NAME_LENGTH = 16
"""The smallest ``max_name_length``: room for a few characters of the name and the fingerprint."""

_FINGERPRINT_LENGTH = 10
_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_ASCII_CLEAN = bytes(byte if byte in _KEPT else ord("_") for byte in range(256))
_APPROVAL = {"allow": 0, "approve": 1}  # each decision but "block": the low bit of a tool's code
_ASYNC_DECIDE = (
    "decide must be a plain function (def, not async def) that gives 'allow', 'approve' or"
    " 'block': the policy is decided when the toolkit is built; look up what it needs first"
)


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:79] + "…"


def _as_tuple(definitions: Iterable[ToolDefinition]) -> tuple[ToolDefinition, ...]:
    if isinstance(definitions, str | bytes | dict):
        raise TypeError(
            f"definitions must be a list of at.ToolDefinition values, not {_shown(definitions)}"
        )
    held = tuple(definitions)
    for definition in held:
        if not isinstance(definition, ToolDefinition):
            raise TypeError(
                f"definitions must be at.ToolDefinition values, not {_shown(definition)}; "
                "read stored catalog JSON with at.catalog.load(list[at.ToolDefinition], data)"
            )
    return held


def _check_source(_member: object, _attribute: object, source: ToolSource) -> None:
    if not isinstance(source, ToolSource):
        raise TypeError(
            f"source must be a tool source (such as the ActorRef runtime.spawn gives), "
            f"not {_shown(source)}"
        )


@attrs.frozen
class Member:
    """A source of an assembly, with the definitions of its tools that the host holds.

    Attributes:
        source: Any :class:`~amends_toolkit.ToolSource`, often the ``ActorRef`` of a spawned
            source. Assembly reads only its ``name``; calls reach it later.
        definitions: The tools the host stored for it (its catalog), in catalog order:
            ``at.ToolDefinition`` values (stored JSON is read with ``at.catalog.load``).

    Raises:
        TypeError: a source that is no ToolSource, or definitions that are not
            ``at.ToolDefinition`` values (such as catalog JSON not read back), naming the fix.
    """

    source: ToolSource = attrs.field(validator=_check_source)
    definitions: Sequence[ToolDefinition] = attrs.field(converter=_as_tuple)


def tool_name(source: str, tool: str, *, max_name_length: int = 64) -> str:
    """The model-facing name of a source's tool: ``<source>__<tool>``, sanitized and cut.

    Raises:
        ValueError: ``max_name_length`` is below 16.
    """
    _check_limit(max_name_length)
    return _name(f"{source}{SEPARATOR}{tool}", max_name_length)


def _name(whole: str, limit: int) -> str:
    return _cut(_clean(whole), limit)


def _clean(text: str) -> str:
    """``text`` with every character model APIs refuse made ``_``."""
    if text.isascii():  # one table look-up a byte, in C (the pattern costs 3x more)
        return text.encode().translate(_ASCII_CLEAN).decode()
    return _OTHER.sub("_", text)


def _cut(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).digest()
    fingerprint = base64.b32encode(digest).decode("ascii").lower()[:_FINGERPRINT_LENGTH]
    return f"{name[: limit - _FINGERPRINT_LENGTH - 1]}_{fingerprint}"


def _check_limit(max_name_length: int) -> None:
    if isinstance(max_name_length, bool) or not isinstance(max_name_length, int):
        raise TypeError(f"max_name_length must be an int, not {type(max_name_length).__name__}")
    if max_name_length < MIN_NAME_LENGTH:
        raise ValueError(
            f"max_name_length must be at least {MIN_NAME_LENGTH} (got {max_name_length}); "
            "a shorter name has no room for the fingerprint that keeps cut names apart"
        )


def assemble(
    members: Iterable[Member],
    decide: Callable[[str, ToolDefinition], Decision],
    *,
    max_name_length: int = 64,
) -> Toolkit:
    """The toolkit of a turn: every member's tools that ``decide`` does not block.

    Args:
        members: The sources and the definitions the host holds for each.
        decide: The host's policy, for a source's name and a definition: ``"allow"`` (the model
            may call it), ``"approve"`` (a harness session asks a person before each call), or
            ``"block"`` (left out: the model neither sees nor calls it). There is no default.
        max_name_length: The longest model-facing name, at least 16; longer names are cut and end
            with a fingerprint of the whole.

    A call reaches the member's source by the name that source knows the tool by. Building
    contacts no source.

    Raises:
        NameClash: tools that would still share one name, every clash at once.
        ValueError: ``max_name_length`` is below 16, or ``decide`` gave no Decision.
        TypeError: a member that is not an ``at.Member`` (a source given bare), the message
            naming the fix.
        TypeError: ``decide`` is async (it must decide at once).
    """
    _check_limit(max_name_length)
    if inspect.iscoroutinefunction(decide):
        raise TypeError(_ASYNC_DECIDE)
    # Per tool, only its name and an int (see SourceTools): no object the collector tracks, and
    # no entry until the tool is first used. One loop, no function call per tool but decide.
    codes: dict[str, int] = {}
    put = codes.setdefault
    clashes: dict[str, list[int]] = {}
    sources: list[ToolSource] = []
    source_names: list[str] = []
    held: list[Sequence[ToolDefinition]] = []
    starts: list[int] = []
    start = 0
    for member in members:
        if not isinstance(member, Member):
            raise TypeError(
                f"members must be at.Member values, not {_shown(member)}: give each source with "
                "its definitions, as in at.assemble([at.Member(ref, await ref.discover())], decide)"
            )
        source = member.source
        source_name = source.name
        definitions = member.definitions
        sources.append(source)
        source_names.append(source_name)
        held.append(definitions)
        starts.append(start)
        prefix = _clean(source_name) + SEPARATOR  # the source's part of each name, made once
        for position, definition in enumerate(definitions, start):
            decision = decide(source_name, definition)
            approval = _APPROVAL.get(decision) if isinstance(decision, str) else None
            if approval is None:
                if decision == "block":
                    continue
                _refuse(decision, f"{source_name}/{definition.name}")
            tool = definition.name
            if tool.isascii():  # _clean, inline
                name = prefix + tool.encode().translate(_ASCII_CLEAN).decode()
            else:
                name = prefix + _OTHER.sub("_", tool)
            if len(name) > max_name_length:
                name = _cut(name, max_name_length)
            code = (position << 1) | approval
            first = put(name, code)
            if first is not code:  # another tool's code (codes are distinct) holds the name
                clashes.setdefault(name, [first]).append(code)
        start += len(definitions)
    tools = SourceTools(
        sources=tuple(sources),
        source_names=tuple(source_names),
        definitions=tuple(held),
        starts=tuple(starts),
    )
    if clashes:
        raise NameClash(
            {name: [tools.route(code) for code in clashed] for name, clashed in clashes.items()}
        )
    return Toolkit(ToolEntries({}, codes, tools))


def _refuse(decision: object, tool: str) -> NoReturn:
    if inspect.isawaitable(decision):
        if inspect.iscoroutine(decision):
            decision.close()  # never awaited: say so here, not in a warning later
        raise TypeError(_ASYNC_DECIDE)
    raise ValueError(
        f"decide gave {decision!r} for {tool}; it must give 'allow', 'approve' or 'block'"
    )
