"""The generic actor runtime: it knows nothing of MCP or HTTP."""

from __future__ import annotations

from amends_toolkit.runtime._actor import ActorRef, ActorStatistics, Restart
from amends_toolkit.runtime._assembly import Member, assemble
from amends_toolkit.runtime._runtime import Runtime
from amends_toolkit.runtime._session import DENIED, Session, asking, untimed
from amends_toolkit.runtime._source import Lifespan, ToolSource
from amends_toolkit.runtime._toolkit import (
    Tool,
    ToolEntry,
    ToolHandler,
    Toolkit,
    ToolResult,
    source_toolkit,
)
from amends_toolkit.runtime._validation import InputValidator, validator_for

__all__ = (
    "DENIED",
    "ActorRef",
    "ActorStatistics",
    "InputValidator",
    "Lifespan",
    "Member",
    "Restart",
    "Runtime",
    "Session",
    "Tool",
    "ToolEntry",
    "ToolHandler",
    "ToolResult",
    "ToolSource",
    "Toolkit",
    "asking",
    "assemble",
    "source_toolkit",
    "untimed",
    "validator_for",
)
