"""The generic actor runtime: it knows nothing of MCP or HTTP."""

from __future__ import annotations

from amends_toolkit.runtime._assembly import Member, assemble
from amends_toolkit.runtime._call import DENIED, ToolResult, asking, untimed
from amends_toolkit.runtime._ref import ActorRef, ActorStatistics, calling_as
from amends_toolkit.runtime._session import Session
from amends_toolkit.runtime._source import Lifespan, NormalExit, ToolSource
from amends_toolkit.runtime._state import StateLoop
from amends_toolkit.runtime._supervisor import (
    GiveUp,
    Restart,
    RestartPolicy,
    Runtime,
    SourceFactory,
)
from amends_toolkit.runtime._toolkit import Toolkit, source_toolkit
from amends_toolkit.runtime._tools import Tool, ToolEntry, ToolHandler
from amends_toolkit.runtime._validation import InputValidator, validator_for

__all__ = (
    "DENIED",
    "ActorRef",
    "ActorStatistics",
    "GiveUp",
    "InputValidator",
    "Lifespan",
    "Member",
    "NormalExit",
    "Restart",
    "RestartPolicy",
    "Runtime",
    "Session",
    "SourceFactory",
    "StateLoop",
    "Tool",
    "ToolEntry",
    "ToolHandler",
    "ToolResult",
    "ToolSource",
    "Toolkit",
    "asking",
    "assemble",
    "calling_as",
    "source_toolkit",
    "untimed",
    "validator_for",
)
