"""amends-toolkit: tools for LLM agents from MCP servers, OpenAPI documents and HTTP operations.

This namespace only re-exports the host-facing API.
"""

from __future__ import annotations

from amends_toolkit import catalog
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
from amends_toolkit.runtime import ActorRef, ActorStatistics, Restart, Runtime, ToolSource

__all__ = (
    "ActorRef",
    "ActorStatistics",
    "Annotations",
    "AuthenticationError",
    "CallFailedError",
    "CatalogError",
    "Decision",
    "Failure",
    "InvalidInputError",
    "InvalidResponseError",
    "JsonObject",
    "JsonValue",
    "NameClash",
    "NotFoundError",
    "Restart",
    "Runtime",
    "ToolDefinition",
    "ToolSource",
    "ToolSourceError",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
    "catalog",
)
