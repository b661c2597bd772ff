"""Adapters to model APIs: a toolkit's tools in each API's request format, and a model's tool
calls run through a Session (or a Toolkit) and answered in that API's shape.

The pydantic-ai toolset is in :mod:`amends_toolkit.adapters.pydantic_ai` (the ``pydantic-ai``
extra). :func:`mcp_server` serves a toolkit as an MCP server; it imports
:mod:`amends_toolkit.adapters.mcp_front` (the ``mcp-server`` extra) when called. Its
:func:`ask_client` is an ``approve`` that asks the MCP client that called (when
:func:`client_can_be_asked`).
"""

from __future__ import annotations

from amends_toolkit.adapters._anthropic import anthropic_tools, run_anthropic_tool_uses
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

__all__ = (
    "Authenticator",
    "Caller",
    "Refused",
    "ToolCaller",
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
