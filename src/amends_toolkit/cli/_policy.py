"""The gateway's policy: glob patterns over model-facing names, the most restrictive winning.

``block`` beats ``approve``, which beats ``allow``; a tool that no pattern names is blocked, and
the gateway says so (once per tool) rather than choosing for the operator.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from amends_toolkit.runtime._assembly import tool_name

if TYPE_CHECKING:
    from amends_toolkit._definitions import Decision, ToolDefinition
    from amends_toolkit.cli._config import PolicyConfig

__all__ = ("GlobPolicy",)


class GlobPolicy:
    """``decide(source, definition)`` for :func:`amends_toolkit.assemble`, from ``[policy]``.

    ``unnamed`` collects the model-facing names that no pattern matched (blocked), so the
    gateway can list them.
    """

    def __init__(self, config: PolicyConfig) -> None:
        self._order: tuple[tuple[Decision, tuple[str, ...]], ...] = (
            ("block", config.block),
            ("approve", config.approve),
            ("allow", config.allow),
        )
        self.unnamed: list[str] = []

    def decision(self, name: str) -> Decision | None:
        """The most restrictive decision a pattern gives this model-facing name, if any."""
        for decision, patterns in self._order:
            if any(fnmatchcase(name, pattern) for pattern in patterns):
                return decision
        return None

    def __call__(self, source: str, definition: ToolDefinition) -> Decision:
        name = tool_name(source, definition.name)
        decision = self.decision(name)
        if decision is None:
            self.unnamed.append(name)
            return "block"
        return decision
