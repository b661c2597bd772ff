"""The gateway's policy: glob patterns over tools' names, the most restrictive winning.

``block`` beats ``approve``, which beats ``allow``; a tool that no pattern names is blocked, and
the gateway says so (once per tool) rather than choosing for the operator.

A pattern names a tool by its model-facing name (``tasks__admin_delete``: cleaned, and cut past
64 characters) or by its upstream name after its source's (``tasks__admin.delete``), whichever
the operator wrote; a ``block`` pattern also by the upstream name alone (``admin.delete``). Only
``block`` reads the name alone: an upstream chooses its tools' names, and a name alone must not
reach an ``allow`` written for another source's tools.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase, translate
from typing import TYPE_CHECKING

from amends_toolkit.runtime._assembly import tool_name
from amends_toolkit.runtime._toolkit import SEPARATOR

if TYPE_CHECKING:
    from amends_toolkit._definitions import Decision, ToolDefinition
    from amends_toolkit.cli._config import PolicyConfig

__all__ = ("GlobPolicy",)


class GlobPolicy:
    """``decide(source, definition)`` for :func:`amends_toolkit.assemble`, from ``[policy]``.

    ``unnamed`` collects the model-facing names that no pattern matched (blocked), so the
    gateway can list them; :meth:`unmatched` gives the patterns that matched no tool. Both
    cover the tools decided since :meth:`reset`.
    """

    def __init__(self, config: PolicyConfig) -> None:
        self._block = _Globs(config.block)
        self._approve = _Globs(config.approve)
        self._allow = _Globs(config.allow)
        self.unnamed: list[str] = []

    def reset(self) -> None:
        """Begin an assembly: forget the unnamed tools and which patterns matched."""
        self.unnamed.clear()
        for globs in (self._block, self._approve, self._allow):
            globs.reset()

    def unmatched(self) -> list[str]:
        """The patterns that matched no tool since :meth:`reset`, as ``"block: PATTERN"``."""
        return [
            f"{decision}: {pattern}"
            for decision, globs in (
                ("block", self._block),
                ("approve", self._approve),
                ("allow", self._allow),
            )
            for pattern in globs.unmatched
        ]

    def __call__(self, source: str, definition: ToolDefinition) -> Decision:
        tool = definition.name
        name = tool_name(source, tool)
        upstream = f"{source}{SEPARATOR}{tool}"
        names = (name,) if upstream == name else (name, upstream)
        # Each list is matched (none skipped) so that every pattern that names a tool is noted.
        blocked = self._block.match((*names, tool))
        approved = self._approve.match(names)
        if blocked:
            return "block"
        if approved:
            return "approve"
        if self._allow.match(names):
            return "allow"
        self.unnamed.append(name)
        return "block"


class _Globs:
    """One list of patterns, matched as one regular expression; it notes the patterns that
    have not matched yet, each tested alone only until it matches."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns
        self._any = _joined(patterns)
        self.unmatched = patterns
        self._unmatched_any = self._any

    def reset(self) -> None:
        self.unmatched, self._unmatched_any = self.patterns, self._any

    def match(self, names: tuple[str, ...]) -> bool:
        """Whether a pattern matches one of the names."""
        found = self._any
        if found is None or not any(found.match(name) for name in names):
            return False
        rest = self._unmatched_any
        if rest is not None and any(rest.match(name) for name in names):
            self.unmatched = tuple(
                p for p in self.unmatched if not any(fnmatchcase(name, p) for name in names)
            )
            self._unmatched_any = _joined(self.unmatched)
        return True


def _joined(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression that matches what any of the patterns matches (as ``fnmatchcase``)."""
    return re.compile("|".join(translate(p) for p in patterns)) if patterns else None
