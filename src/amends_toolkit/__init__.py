"""amends-toolkit: tools for LLM agents from MCP servers, OpenAPI documents and HTTP operations.

This namespace only re-exports the host-facing API.
"""

from __future__ import annotations

from amends_toolkit import adapters, catalog, http, mcp, openapi, presentation
from amends_toolkit._definitions import Annotations, Decision, ToolDefinition
from amends_toolkit._errors import (
    AuthenticationError,
    CallFailedError,
    CatalogError,
    Failure,
    InvalidInputError,
    InvalidResponseError,
    NameClash,
    NotFoundError,
    ToolSourceError,
    UnavailableError,
    UnknownError,
    UnsupportedError,
)
from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit._progress import Progress
from amends_toolkit.presentations import (
    CodeRuntime,
    InProcessRuntime,
    MontyRuntime,
    code_mode,
    tool_search,
)
from amends_toolkit.runtime import (
    ActorRef,
    ActorStatistics,
    Member,
    Restart,
    Runtime,
    Session,
    Tool,
    ToolEntry,
    Toolkit,
    ToolResult,
    ToolSource,
    assemble,
    source_toolkit,
)

__all__ = (
    "ActorRef",
    "ActorStatistics",
    "Annotations",
    "AuthenticationError",
    "CallFailedError",
    "CatalogError",
    "CodeRuntime",
    "Decision",
    "Failure",
    "InProcessRuntime",
    "InvalidInputError",
    "InvalidResponseError",
    "JsonObject",
    "JsonValue",
    "Member",
    "MontyRuntime",
    "NameClash",
    "NotFoundError",
    "Progress",
    "Restart",
    "Runtime",
    "Session",
    "Tool",
    "ToolDefinition",
    "ToolEntry",
    "ToolResult",
    "ToolSource",
    "ToolSourceError",
    "Toolkit",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
    "adapters",
    "assemble",
    "catalog",
    "code_mode",
    "http",
    "mcp",
    "openapi",
    "presentation",
    "source_toolkit",
    "tool_search",
)
