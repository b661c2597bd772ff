"""The generic actor runtime: it knows nothing of MCP or HTTP."""

from __future__ import annotations

from amends_toolkit.runtime._actor import ActorRef, ActorStatistics, Restart
from amends_toolkit.runtime._runtime import Runtime
from amends_toolkit.runtime._source import Lifespan, ToolSource
from amends_toolkit.runtime._validation import InputValidator, validator_for

__all__ = (
    "ActorRef",
    "ActorStatistics",
    "InputValidator",
    "Lifespan",
    "Restart",
    "Runtime",
    "ToolSource",
    "validator_for",
)
