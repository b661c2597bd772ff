"""Presentations: a toolkit shown to a model another way (tool search, code mode), and what they share."""

from __future__ import annotations

from amends_toolkit.presentations._code import ApprovalMode, CodeTools, code_mode
from amends_toolkit.presentations._code_runtime import (
    Approval,
    CodeError,
    CodeRuntime,
    ToolError,
)
from amends_toolkit.presentations._hybrid import HybridRanker
from amends_toolkit.presentations._in_process import InProcessRuntime
from amends_toolkit.presentations._index import SearchIndex, ToolRanker
from amends_toolkit.presentations._monty import Finished, MontyRuntime, Paused, PendingCall
from amends_toolkit.presentations._presentation import call, merge, restrict
from amends_toolkit.presentations._search import tool_search

__all__ = (
    "Approval",
    "ApprovalMode",
    "CodeError",
    "CodeRuntime",
    "CodeTools",
    "Finished",
    "HybridRanker",
    "InProcessRuntime",
    "MontyRuntime",
    "Paused",
    "PendingCall",
    "SearchIndex",
    "ToolError",
    "ToolRanker",
    "call",
    "code_mode",
    "merge",
    "restrict",
    "tool_search",
)
