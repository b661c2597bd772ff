"""Adapters to model APIs: a toolkit's tools in each API's request format, and a model's tool
calls run through a Session (or a Toolkit) and answered in that API's shape.

The pydantic-ai toolset is in :mod:`amends_toolkit.adapters.pydantic_ai` (the ``pydantic-ai``
extra), the OpenAI Agents SDK's tools in :mod:`amends_toolkit.adapters.openai_agents` (the
``openai-agents`` extra) and LangChain's in :mod:`amends_toolkit.adapters.langchain` (the
``langchain`` extra): each is imported when first read (``at.adapters.openai_agents.tools``), so
this package imports without them. :func:`mcp_server` serves a toolkit as an MCP server; it
imports :mod:`amends_toolkit.adapters.mcp_front` (the ``mcp-server`` extra) when called. Its
:func:`ask_client` is an ``approve`` that asks the MCP client that called (when
:func:`client_can_be_asked`).

:class:`Approvals` asks approvers out of band: a call that needs approval waits, stored in an
:class:`ApprovalStore` (:class:`MemoryApprovalStore`, :class:`SQLiteApprovalStore`), until a host's
page (or the gateway's ``POST /approvals/{id}``) decides it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from amends_toolkit.adapters._anthropic import anthropic_tools, run_anthropic_tool_uses
from amends_toolkit.adapters._approvals import (
    AlreadyDecided,
    Approvals,
    ApprovalStore,
    MemoryApprovalStore,
    PendingApproval,
    SQLiteApprovalStore,
    UnknownApproval,
)
from amends_toolkit.adapters._asking import ask_client, client_can_be_asked
from amends_toolkit.adapters._callers import Authenticator, Caller, Refused, caller_of
from amends_toolkit.adapters._calls import ToolCaller
from amends_toolkit.adapters._mcp_server import mcp_server
from amends_toolkit.adapters._openai import (
    openai_responses_tools,
    openai_tools,
    run_openai_function_calls,
    run_openai_tool_calls,
)

if TYPE_CHECKING:
    from types import ModuleType

    # For type checkers: at runtime __getattr__ imports each when first read.
    from amends_toolkit.adapters import langchain as langchain
    from amends_toolkit.adapters import openai_agents as openai_agents
    from amends_toolkit.adapters import pydantic_ai as pydantic_ai

__all__ = (
    "AlreadyDecided",
    "ApprovalStore",
    "Approvals",
    "Authenticator",
    "Caller",
    "MemoryApprovalStore",
    "PendingApproval",
    "Refused",
    "SQLiteApprovalStore",
    "ToolCaller",
    "UnknownApproval",
    "anthropic_tools",
    "ask_client",
    "caller_of",
    "client_can_be_asked",
    "mcp_server",
    "openai_responses_tools",
    "openai_tools",
    "run_anthropic_tool_uses",
    "run_openai_function_calls",
    "run_openai_tool_calls",
)

_FRAMEWORKS: Final = frozenset({"langchain", "openai_agents", "pydantic_ai"})

if not TYPE_CHECKING:  # type checkers read the three names above, and no others

    def __getattr__(name: str) -> ModuleType:
        # A framework's module, imported when first read: it needs its extra, which
        # missing_extra names when it is not installed.
        if name in _FRAMEWORKS:
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
