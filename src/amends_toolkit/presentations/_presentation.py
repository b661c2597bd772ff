"""What presentations share: running a tool of a toolkit, and toolkits of some tools of others.

``restrict`` and ``merge`` reuse the entries of the toolkits they take: a tool runs in the toolkit
they give exactly as in the one it comes from (same handler, same source, same checked schema,
same ``needs_approval``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amends_toolkit.runtime import Toolkit

if TYPE_CHECKING:
    from collections.abc import Iterable

    from amends_toolkit._json import JsonInput, JsonValue

__all__ = ("call", "merge", "restrict")


async def call(
    toolkit: Toolkit, name: str, input: JsonInput, *, approved: bool = False
) -> JsonValue:
    """Run a tool of ``toolkit`` and give its result as JSON; a tool that gives nothing gives None.

    The input is checked and the tool runs as ``toolkit.call`` runs it. Nobody is asked for
    approval: a tool that needs it fails (``ApprovalRequired``) unless the host says it approved
    this call (``approved=True``); a :class:`~amends_toolkit.Session` asks a person.
    Cancellation propagates.

    Raises:
        Failure: the call failed: an unknown name (``NotFoundError``), an input the tool's
            schema refuses (``InvalidInputError``), a tool that needs approval
            (``ApprovalRequired``), or the tool's own failure. Its ``__cause__`` is the
            source's ``ToolSourceError``, when there is one.
    """
    result = await toolkit.invoke(name, input, approved=approved)
    if result.failure is not None:
        raise result.failure from result.error
    return result.value


def restrict(toolkit: Toolkit, names: Iterable[str]) -> Toolkit:
    """A toolkit of only the named tools of ``toolkit``, in its order, each running as there.

    Raises:
        TypeError: ``names`` is one string rather than a collection of names.
        ValueError: a name is no tool of ``toolkit`` (every such name is listed).
    """
    if isinstance(names, str):
        raise TypeError(f"names must be a collection of tool names, not the string {names!r}")
    wanted = set(names)
    missing = sorted(wanted.difference(toolkit.tools))
    if missing:
        raise ValueError(
            f"restrict: no tool named {', '.join(map(repr, missing))} in the toolkit;"
            " name tools it has (toolkit.tools), or leave these out"
        )
    return Toolkit.from_entries(entry for entry in toolkit.entries() if entry.name in wanted)


def merge(a: Toolkit, b: Toolkit) -> Toolkit:
    """A toolkit of the tools of ``a`` then those of ``b``, each running as in its own toolkit.

    A tool both hold (the same entry, as when both were restricted from one toolkit) is one
    tool.

    Raises:
        NameClash: two different tools have one name (every clash at once); rename a source,
            or restrict one toolkit so that it leaves the name out.
    """
    return Toolkit.from_entries([*a.entries(), *b.entries()])
