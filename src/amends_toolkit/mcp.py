"""MCP servers as tool sources: ``at.mcp.http(...)`` and ``at.mcp.stdio(...)``."""

from __future__ import annotations

from amends_toolkit.actors._mcp import http
from amends_toolkit.actors._mcp_stdio import stdio

__all__ = ("http", "stdio")
