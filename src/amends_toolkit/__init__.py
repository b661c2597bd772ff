"""amends-toolkit: tools for LLM agents from MCP servers, OpenAPI documents and HTTP operations.

A host builds *tool sources* over clients it gave their credentials, runs each as a supervised
actor, assembles the tools of a turn under its policy, and hands them to a model::

    import httpx, amends_toolkit as at

    async with httpx.AsyncClient(headers=...) as client, at.Runtime() as runtime:
        tasks = await runtime.spawn(at.mcp.http(name="tasks", url=URL, client=client))
        toolkit = at.assemble([at.Member(tasks, await tasks.discover())], decide)
        async with at.Session(toolkit, approve=ask_a_person) as session:
            answer = await session.call("tasks__list_tasks", {})   # JSON, or a Failure's JSON

The map of the package (this namespace only re-exports):

Sources (each an ``at.ToolSource``; every failure a ``ToolSourceError`` reason)
    ``at.mcp.http``, ``at.mcp.stdio``: MCP servers over Streamable HTTP or a subprocess.
    ``at.http.make`` over ``at.http.Operation`` values: HTTP operations written as data.
    ``at.openapi.read_operations``: the operations of an OpenAPI document.
Definitions and the catalog
    ``at.ToolDefinition``, ``at.Annotations``; ``at.catalog.dump`` / ``at.catalog.load`` to
    store them as JSON and read them back (``at.CatalogError``).
The runtime
    ``at.Runtime`` (the supervisor), ``runtime.spawn`` gives an ``at.ActorRef`` (itself a
    source; ``statistics()`` gives ``at.ActorStatistics``); ``at.Restart`` says how a crashed
    source is restarted; ``with at.calling_as(caller):`` names the caller of the calls made in
    it, for a source spawned with a share per caller (``max_per_caller``).
Assembly and turns
    ``at.assemble`` with ``at.Member`` values and a policy (``at.Decision``) gives an
    ``at.Toolkit`` of ``at.Tool`` values (``at.ToolEntry`` when building one by hand;
    ``invoke`` gives an ``at.ToolResult``); ``at.Session`` runs a turn's calls (approval,
    timeout, ``on_error``, ``on_progress`` with ``at.Progress`` values); ``at.source_toolkit``
    gives one source's tools unprefixed.
Failures
    ``at.ToolSourceError`` and its reasons (``at.AuthenticationError``, ``at.NotFoundError``,
    ``at.InvalidInputError``, ``at.CallFailedError``, ``at.UnavailableError``,
    ``at.InvalidResponseError``, ``at.UnsupportedError``, ``at.UnknownError``) for the host;
    ``at.Failure`` for what a model reads; ``at.NameClash`` for an assembly's clash;
    ``at.NoApproval`` (``at.ApprovalRequired``, ``at.ApprovalTimedOut``), raised by an
    ``approve`` that got no person's decision.
Presentations
    ``at.tool_search``, ``at.code_mode`` (with ``at.MontyRuntime``, any ``at.CodeRuntime``, or
    ``at.InProcessRuntime`` in tests), and ``at.presentation`` (``call``, ``restrict``,
    ``merge``).
Adapters (``at.adapters``)
    ``openai_tools``, ``anthropic_tools`` and the ``run_*`` functions for model APIs;
    ``mcp_server`` serves a toolkit over MCP (the ``mcp-server`` extra);
    ``amends_toolkit.adapters.pydantic_ai`` (the ``pydantic-ai`` extra).
Conformance and testing
    ``amends_toolkit.conformance``: the checks every kind of source passes, for your own too;
    ``amends_toolkit.testing``: recording and scripted sources, ``allow_all``, a virtual clock.

Logging goes through the standard ``logging`` module (logger ``amends_toolkit``), never
configured here. Types: ``at.JsonValue`` (what a tool answers), ``at.JsonObject``, and
``at.JsonInput`` (an input as a host gives it: a ``dict[str, str]`` is one).
"""

from __future__ import annotations

from amends_toolkit import adapters, catalog, http, mcp, openapi, presentation
from amends_toolkit._definitions import Annotations, Decision, ToolDefinition
from amends_toolkit._errors import (
    ApprovalRequired,
    ApprovalTimedOut,
    AuthenticationError,
    CallFailedError,
    CatalogError,
    Failure,
    InvalidInputError,
    InvalidResponseError,
    NameClash,
    NoApproval,
    NotFoundError,
    ToolSourceError,
    UnavailableError,
    UnknownError,
    UnsupportedError,
)
from amends_toolkit._json import JsonInput, JsonObject, JsonValue
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
    calling_as,
    source_toolkit,
)

__version__ = "0.1.0"
"""The package's version; pyproject.toml reads it from here."""

__all__ = (
    "ActorRef",
    "ActorStatistics",
    "Annotations",
    "ApprovalRequired",
    "ApprovalTimedOut",
    "AuthenticationError",
    "CallFailedError",
    "CatalogError",
    "CodeRuntime",
    "Decision",
    "Failure",
    "InProcessRuntime",
    "InvalidInputError",
    "InvalidResponseError",
    "JsonInput",
    "JsonObject",
    "JsonValue",
    "Member",
    "MontyRuntime",
    "NameClash",
    "NoApproval",
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
    "calling_as",
    "catalog",
    "code_mode",
    "http",
    "mcp",
    "openapi",
    "presentation",
    "source_toolkit",
    "tool_search",
)
