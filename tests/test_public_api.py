"""The host-facing surface: the names ARCHITECTURE.md binds, and nothing heavy on import."""

from __future__ import annotations

import subprocess
import sys

import amends_toolkit as at

SURFACE = {
    "ActorRef", "ActorStatistics", "Annotations", "AuthenticationError", "CallFailedError",
    "CatalogError", "CodeRuntime", "Decision", "Failure", "InProcessRuntime",
    "InvalidInputError", "InvalidResponseError", "JsonInput", "JsonObject", "JsonValue", "Member",
    "MontyRuntime", "NameClash", "NoApproval", "ApprovalRequired", "ApprovalTimedOut", "NotFoundError", "Progress", "Restart", "Runtime", "Session", "Tool",
    "ToolDefinition", "ToolEntry", "ToolResult", "ToolSource", "ToolSourceError", "Toolkit",
    "UnavailableError", "UnknownError", "UnsupportedError", "adapters", "assemble", "calling_as", "catalog",
    "code_mode", "http", "mcp", "openapi", "presentation", "source_toolkit", "tool_search",
}  # fmt: skip


def test_the_namespace_exports_exactly_the_host_facing_api() -> None:
    assert set(at.__all__) == SURFACE
    assert all(hasattr(at, name) for name in at.__all__)


def test_every_name_the_architecture_binds_is_reachable() -> None:
    from amends_toolkit import conformance

    for owner, names in [
        (at.mcp, ["http", "stdio"]),
        (at.http, ["Operation", "RequestTemplate", "Param", "make"]),
        (at.openapi, ["read_operations"]),
        (at.catalog, ["dump", "load"]),
        (
            at.presentation,
            ["call", "restrict", "merge", "SearchIndex", "ToolRanker", "HybridRanker"],
        ),
        (
            at.adapters,
            ["openai_tools", "anthropic_tools", "mcp_server", "Caller", "Refused", "caller_of"],
        ),
        (conformance, ["Fixture", "run"]),
    ]:
        missing = [name for name in names if not hasattr(owner, name)]
        assert not missing, f"{owner.__name__} lacks {missing}"


def test_importing_the_package_loads_no_optional_dependency() -> None:
    script = (
        "import sys, amends_toolkit as at; "
        "print(sorted(m for m in ('mcp', 'fastmcp', 'pydantic_ai', 'pydantic_monty', 'yaml', "
        "'openai', 'anthropic', 'numpy', 'wordllama') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_version_is_the_one_the_package_is_built_with() -> None:
    import re
    from pathlib import Path

    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'path = "src/amends_toolkit/__init__.py"' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", at.__version__)


def test_the_package_docstring_is_a_map_of_it() -> None:
    assert at.__doc__ is not None
    missing = [name for name in at.__all__ if f"at.{name}" not in at.__doc__]
    assert not missing
