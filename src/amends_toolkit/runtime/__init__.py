"""The generic actor runtime: it knows nothing of MCP or HTTP."""

from __future__ import annotations

from amends_toolkit.runtime._source import Lifespan, ToolSource
from amends_toolkit.runtime._validation import InputValidator, validator_for

__all__ = ("InputValidator", "Lifespan", "ToolSource", "validator_for")
